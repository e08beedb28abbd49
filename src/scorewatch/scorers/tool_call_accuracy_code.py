"""The tool-call accuracy scorer, code variant: did the agent call the expected tool(s)?

Model-free and deterministic, with the reference system's rules: the tool calls are read from
the output (`scorers.utils.extract_tool_calls`: agent messages, whose invocations count in state
`call`, `result` or `output-error` (a tool that threw was still called), or OpenAI
`tool_calls`) and compared with the expectation.

* `expected_tool`: 1 when it was called (with `strict_mode`: when it is the ONLY call made);
* `expected_tool_order`: 1 when those tools were called in that order (the first call of
  each), other calls allowed around them (with `strict_mode`: the calls are exactly that
  list). The order wins when both are given.

An output without tool calls scores 0. A run without input messages or without output
messages is an error, as in the reference. The preprocess result has the reference's keys
(`actualTools`, `toolCallInfos`, `correctToolCalled`, `correctOrderCalled`, ...). Score: 1 or
0, higher is better, no judge call.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from ..core import Scorer, StepContext
from ._card import ScorerCard, prebuilt
from ._measured import measured_scorer
from ._text import found_tool_calls
from .utils import ToolCallInfo, ToolName, extract_input_messages

__all__ = [
    "TOOL_CALL_ACCURACY_CODE_SCORER_ID",
    "called_in_order",
    "create_tool_call_accuracy_code_scorer",
]

TOOL_CALL_ACCURACY_CODE_SCORER_ID = "code-tool-call-accuracy-scorer"

_CARD = ScorerCard(
    name="tool-call-accuracy-code",
    id=TOOL_CALL_ACCURACY_CODE_SCORER_ID,
    scorer_name="Tool Call Accuracy Scorer",
    description="Checks that the agent called the expected tool, or the expected tools in order",
)


def called_in_order(
    actual: Sequence[ToolName], expected: Sequence[ToolName], strict: bool = False
) -> bool:
    """True when `expected` was called in that order (first calls of each tool, as the
    reference system checks), or, with `strict`, when the calls are exactly `expected`."""
    if strict:
        return list(actual) == list(expected)
    positions: list[int] = []
    for tool in expected:
        if tool not in actual:
            return False
        positions.append(list(actual).index(tool))
    return all(later > earlier for earlier, later in pairwise(positions))


def _camel_info(info: ToolCallInfo) -> dict[str, Any]:
    # Its fields are text and numbers: `asdict`'s deep copy of them would be them again.
    return {
        "toolName": info.tool_name,
        "toolCallId": info.tool_call_id,
        "messageIndex": info.message_index,
        "invocationIndex": info.invocation_index,
    }


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | tuple) and len(value) == 0)


@prebuilt(_CARD)
def create_tool_call_accuracy_code_scorer(
    *,
    expected_tool: str | None = None,
    expected_tool_order: Sequence[str] | None = None,
    strict_mode: bool = False,
) -> Scorer:
    """1 when the expected tool (or tool order) was called, else 0. Give `expected_tool` or a
    non-empty `expected_tool_order`; `strict_mode` forbids other calls. No judge call."""
    order = list(expected_tool_order) if expected_tool_order else None
    if not expected_tool and not order:
        # The reference accepts an empty order and then scores every run 0.
        raise ValueError("give expected_tool or a non-empty expected_tool_order")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        if _is_empty(ctx.run.input) or not extract_input_messages(ctx.run.input):
            raise ValueError("the run has no input messages")
        if _is_empty(ctx.run.output):
            raise ValueError("the run has no output messages")
        found = found_tool_calls(ctx.run.output)
        actual = found.tools
        if expected_tool:
            correct = actual == [expected_tool] if strict_mode else expected_tool in actual
        else:
            correct = False
        measurement: dict[str, Any] = {"expectedTool": expected_tool} if expected_tool else {}
        measurement.update(actualTools=actual, strictMode=strict_mode)
        if order:
            measurement["expectedToolOrder"] = order
        measurement.update(
            hasToolCalls=bool(actual),
            correctToolCalled=correct,
            toolCallInfos=[_camel_info(info) for info in found.tool_call_infos],
            correctOrderCalled=called_in_order(actual, order, strict_mode) if order else None,
        )
        return measurement

    def score(found: Any) -> int:
        if not found["actualTools"]:
            return 0
        if order:
            return 1 if found["correctOrderCalled"] else 0
        return 1 if found["correctToolCalled"] else 0

    description = (
        f"Checks that the tools were called in the order {' -> '.join(order)}"
        if order
        else f"Checks that the agent called {expected_tool!r}"
    )
    return measured_scorer(
        _CARD,
        description=description,
        measure=inspect_run,
        score=score,
    )
