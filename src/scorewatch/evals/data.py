"""Dataset items: validation and the target call that produces each item's output."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.result import ScorerRun
from ..errors import ScorewatchError

__all__ = [
    "INVALID_DATA_ITEM",
    "NO_DATA",
    "RUN_FIELD_KEYS",
    "TARGET_FAILED",
    "EvalItem",
    "Target",
    "describe_item",
    "produce_output",
    "validate_items",
]

NO_DATA = "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED"
INVALID_DATA_ITEM = "INVALID_DATA_ITEM"
TARGET_FAILED = "RUN_EXPERIMENT_TARGET_FAILED_TO_GENERATE_RESULT"

Target = Callable[[Any], Any]

# Run fields an item may carry besides input/output: where the item came from (a trace's span,
# when the items are runs built from traces).
RUN_FIELD_KEYS = (
    "score_source",
    "target",
    "target_scope",
    "target_entity_type",
    "target_trace_id",
    "target_span_id",
    "target_correlation_context",
    "target_metadata",
)


@dataclass(frozen=True, slots=True)
class EvalItem:
    index: int
    input: Any
    output: Any
    ground_truth: Any
    request_context: Any
    has_output: bool
    raw: Mapping[str, Any]
    run_fields: Mapping[str, Any] = field(default_factory=dict)

    def scorer_run(self, output: Any) -> ScorerRun:
        """The run a scorer gets for this item: an experiment run unless the item says otherwise."""
        fields: dict[str, Any] = {"score_source": "experiment", **self.run_fields}
        return ScorerRun(
            input=self.input,
            output=output,
            ground_truth=self.ground_truth,
            request_context=self.request_context,
            **fields,
        )


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
            EvalItem(
                index=index,
                input=raw.get("input"),
                output=raw.get("output"),
                ground_truth=raw.get("ground_truth", raw.get("groundTruth")),
                request_context=raw.get("request_context", raw.get("requestContext")),
                has_output="output" in raw,
                raw=raw,
                run_fields={key: raw[key] for key in RUN_FIELD_KEYS if key in raw},
            )
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
        return item.output
    try:
        value = target(item.input)
        if inspect.isawaitable(value):
            value = await value
    except Exception as error:
        raise ScorewatchError(
            f"Failed to run experiment: target failed on item {item.index}: {error}",
            code=TARGET_FAILED,
            details={"item": item.index},
        ) from error
    return value
