"""Dataset items: validation and the target call that produces each item's output."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.call import CALL_FIELDS, AgentCall
from ..errors import ScorewatchError

__all__ = [
    "INVALID_DATA_ITEM",
    "NO_DATA",
    "TARGET_FAILED",
    "EvalItem",
    "Target",
    "describe_item",
    "item_call",
    "produce_output",
    "validate_items",
]

NO_DATA = "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED"
INVALID_DATA_ITEM = "INVALID_DATA_ITEM"
TARGET_FAILED = "RUN_EXPERIMENT_TARGET_FAILED_TO_GENERATE_RESULT"

Target = Callable[[Any], Any]

# The reference's camelCase names of an item's fields, accepted beside the snake_case ones.
_CAMEL_KEYS = {"groundTruth": "ground_truth", "requestContext": "request_context"}


def item_call(raw: Mapping[str, Any], output: Any = None) -> AgentCall:
    """The agent call a dataset item describes, answered with `output` (default: the item's
    own): every `AgentCall` field the item names (`groundTruth` and `requestContext` too; the
    snake_case name wins), an `experiment` call unless the item says where it came from (a
    trace's runs say `trace`)."""
    fields: dict[str, Any] = {"score_source": "experiment"}
    for key, name in _CAMEL_KEYS.items():
        if key in raw:
            fields[name] = raw[key]
    fields.update((name, raw[name]) for name in CALL_FIELDS if name in raw)
    if output is not None:
        fields["output"] = output
    return AgentCall(**fields)


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One dataset item: its place, the call it describes (`item_call`), whether it gave an
    output, and the item as given."""

    index: int
    call: AgentCall
    has_output: bool
    raw: Mapping[str, Any]

    def answered(self, output: Any) -> AgentCall:
        """The item's call with `output` (the produced one, or the item's own)."""
        return self.call if output is self.call.output else replace(self.call, output=output)


def validate_items(data: Sequence[Mapping[str, Any]], *, has_target: bool) -> list[EvalItem]:
    if not data:
        raise ScorewatchError("Failed to run experiment: Data array is empty", code=NO_DATA)
    items: list[EvalItem] = []
    for index, raw in enumerate(data):
        if not isinstance(raw, Mapping):
            raise _item_error(index, f"expected a mapping, got {type(raw).__name__}")
        if has_target and "input" not in raw:
            raise _item_error(index, "has no 'input'")
        if not has_target and "output" not in raw:
            raise _item_error(index, "has no 'output' (and no target was given to produce one)")
        items.append(
            EvalItem(index=index, call=item_call(raw), has_output="output" in raw, raw=raw)
        )
    return items


def _item_error(index: int, problem: str) -> ScorewatchError:
    return ScorewatchError(
        f"invalid data item {index}: {problem}",
        code=INVALID_DATA_ITEM,
        details={"item": index},
    )


def describe_item(item: EvalItem) -> str:
    """A short JSON rendering of the item for error details."""
    try:
        text = json.dumps(dict(item.raw), default=str)
    except (TypeError, ValueError):
        text = repr(item.raw)
    return text if len(text) <= 500 else text[:497] + "..."


async def produce_output(target: Target | None, item: EvalItem) -> Any:
    if target is None:
        return item.call.output
    try:
        value = target(item.call.input)
        if inspect.isawaitable(value):
            value = await value
    except Exception as error:
        raise ScorewatchError(
            f"Failed to run experiment: target failed on item {item.index}: {error}",
            code=TARGET_FAILED,
            details={"item": item.index},
        ) from error
    return value
