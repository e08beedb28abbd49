"""Dataset items: validation, the target call that produces each item's output (one call per
turn for a multi-turn item), and the run a scorer is given for an item."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.call import CALL_FIELDS, AgentCall
from ..core.result import ScorerRun
from ..core.scorer import Scorer
from ..errors import ScorewatchError
from ..scorers._trajectory import trajectory_of
from ..scorers.utils import js_json

__all__ = [
    "INVALID_DATA_ITEM",
    "NO_DATA",
    "TARGET_FAILED",
    "EvalItem",
    "Target",
    "describe_item",
    "is_trajectory_scorer",
    "item_call",
    "produce_output",
    "validate_items",
]

NO_DATA = "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED"
INVALID_DATA_ITEM = "INVALID_DATA_ITEM"
TARGET_FAILED = "RUN_EXPERIMENT_TARGET_FAILED_TO_GENERATE_RESULT"

Target = Callable[..., Any]

# The reference's camelCase names of an item's fields, accepted beside the snake_case ones.
_CAMEL_KEYS = {"groundTruth": "ground_truth", "requestContext": "request_context"}


def item_call(raw: Mapping[str, Any], output: Any = None) -> AgentCall:
    """The agent call a dataset item describes, answered with `output` (default: the item's
    own): every `AgentCall` field the item names (`groundTruth` and `requestContext` too; the
    snake_case name wins), an `experiment` call unless the item says where it came from (a
    trace's runs say `trace`). A multi-turn item's input is its first turn."""
    fields: dict[str, Any] = {"score_source": "experiment"}
    for key, name in _CAMEL_KEYS.items():
        if key in raw:
            fields[name] = raw[key]
    fields.update((name, raw[name]) for name in CALL_FIELDS if name in raw)
    turns = raw.get("inputs")
    if "input" not in raw and isinstance(turns, list | tuple) and turns:
        fields["input"] = turns[0]
    if output is not None:
        fields["output"] = output
    return AgentCall(**fields)


def _field(raw: Mapping[str, Any], snake: str, camel: str) -> Any:
    return raw.get(snake, raw.get(camel))


def is_trajectory_scorer(scorer: Scorer) -> bool:
    """A scorer of the trajectory kind (`type="trajectory"`): it is given the run's trajectory and
    the item's expected trajectory."""
    return bool(scorer.type == "trajectory")


def trajectory_output(output: Any) -> dict[str, Any]:
    """The trajectory a trajectory scorer is given for an output: `{"steps": [...], "rawOutput":
    output}` read from agent or chat messages (a trajectory is kept as it is); `{"steps": []}`
    for an empty output, as the reference's runner gives it."""
    if not _js_truthy(output):
        return {"steps": []}
    return trajectory_of(output)


@dataclass(frozen=True, slots=True)
class EvalItem:
    """One dataset item: its place, the call it describes (`item_call`; a multi-turn item's input
    is its first turn, as the reference's scorers see it), whether it gave an output, the item as
    given, its expected trajectory, and its turns (`inputs`) when it is a conversation."""

    index: int
    call: AgentCall
    has_output: bool
    raw: Mapping[str, Any]
    expected_trajectory: Any = None
    inputs: tuple[Any, ...] | None = None

    def answered(self, output: Any) -> AgentCall:
        """The item's call with `output` (the produced one, or the item's own)."""
        return self.call if output is self.call.output else replace(self.call, output=output)

    def scorer_run(
        self,
        output: Any,
        *,
        trajectory: bool = False,
        entity_type: str | None = None,
        scope: str | None = None,
    ) -> ScorerRun:
        """The run a scorer gets for this item (`ScorerRun.of_call` of its answered call).

        A trajectory scorer (`trajectory=True`) gets the output's trajectory, the item's expected
        trajectory and `target_scope="trajectory"`; any other scorer the output as it is.
        `entity_type` names the target's kind when the item does not (run_evals' "agent"), and
        `scope` the other runs' `target_scope` when the call does not set one (run_evals' "span").
        """
        call = self.answered(trajectory_output(output) if trajectory else output)
        if entity_type is not None and call.entity_type is None:
            call = replace(call, entity_type=entity_type)
        run = ScorerRun.of_call(call)
        if trajectory:
            run.target_scope = "trajectory"
            run.expected_trajectory = self.expected_trajectory
        elif run.target_scope is None:
            run.target_scope = scope
        return run


def validate_items(data: Sequence[Mapping[str, Any]], *, has_target: bool) -> list[EvalItem]:
    """The items, checked as the reference checks them: each needs an `input`, or `inputs` (a
    non-empty list of turns); without a target, an `output` instead."""
    if not data:
        raise ScorewatchError("Failed to run experiment: Data array is empty", code=NO_DATA)
    items: list[EvalItem] = []
    for index, raw in enumerate(data):
        if not isinstance(raw, Mapping):
            raise _item_error(index, f"must be a mapping, got {type(raw).__name__}")
        if "turns" in raw:
            raise _item_error(
                index, "'turns' (per-turn scorers) is not supported; give the turns as 'inputs'"
            )
        if has_target and "input" not in raw and "inputs" not in raw:
            raise _item_error(index, "must have 'input' or 'inputs'")
        if not has_target and "output" not in raw:
            raise _item_error(index, "has no 'output' (and no target was given to produce one)")
        inputs = raw.get("inputs")
        if "inputs" in raw and (not isinstance(inputs, list | tuple) or not inputs):
            raise _item_error(index, "'inputs' must be a non-empty list of turns")
        turns = tuple(inputs) if isinstance(inputs, list | tuple) else None
        items.append(
            EvalItem(
                index=index,
                call=item_call(raw),
                has_output="output" in raw,
                raw=raw,
                expected_trajectory=_field(raw, "expected_trajectory", "expectedTrajectory"),
                inputs=turns,
            )
        )
    return items


def _item_error(index: int, problem: str) -> ScorewatchError:
    return ScorewatchError(
        f"Invalid data item at index {index}: {problem}",
        code=INVALID_DATA_ITEM,
        details={"itemIndex": index},
    )


def describe_item(item: EvalItem) -> str:
    """The item as compact JSON, as the reference names an item in an error's details."""
    return js_json(item.raw)


def _js_truthy(value: Any) -> bool:
    """JavaScript's truthiness: an empty list or mapping is true, an empty string or 0 false."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return bool(value) and value == value  # 0 and NaN are false
    return True


def _takes_thread(target: Target) -> bool:
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    return any(
        (p.name == "thread_id" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        or p.kind is p.VAR_KEYWORD
        for p in parameters
    )


async def _call(target: Target, value: Any, thread_id: str | None) -> Any:
    produced = target(value) if thread_id is None else target(value, thread_id=thread_id)
    if inspect.isawaitable(produced):
        produced = await produced
    return produced


async def produce_output(target: Target | None, item: EvalItem) -> Any:
    """The item's output: its own `output` without a target, else the target's answer.

    A multi-turn item sends its turns one after another; a target that takes a `thread_id`
    keyword gets the same fresh id for every turn of the item (its conversation, as the
    reference's runner gives an agent one memory thread per item). The output is every turn's
    output in order, a turn's list of messages spread into it.
    """
    if target is None:
        return item.call.output
    try:
        if item.inputs is None:
            return await _call(target, item.call.input, None)
        thread_id = str(uuid.uuid4()) if _takes_thread(target) else None
        conversation: list[Any] = []
        for turn in item.inputs:
            answer = await _call(target, turn, thread_id)
            if isinstance(answer, list | tuple):
                conversation.extend(answer)
            elif _js_truthy(answer):
                conversation.append(answer)
        return conversation
    except Exception as error:
        raise ScorewatchError(
            f"Failed to run experiment: Error generating result from target: {error}",
            code=TARGET_FAILED,
            details={"item": describe_item(item), "itemIndex": item.index},
        ) from error
