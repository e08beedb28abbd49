"""The tool-call accuracy scorer, code variant: did the agent call the expected tool(s)?

Model-free and deterministic: the tool calls are read from the output
(`scorers.utils.extract_tool_calls`, agent messages or OpenAI `tool_calls`) and compared with
the expectation. Nothing to learn from a library here: the check is a list comparison.

* `expected_tool`: 1 when it was called (with `strict_mode`: when it is the ONLY call made);
* `expected_tool_order`: 1 when those tools were called in that order, other calls allowed
  around them (with `strict_mode`: the calls are exactly that list). The order wins when both
  are given.

Score: 1 or 0, higher is better, no judge call. An output without tool calls scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from ..core import Scorer, StepContext
from ._measured import measured_scorer
from ._text import tool_calls_of

__all__ = [
    "TOOL_CALL_ACCURACY_CODE_SCORER_ID",
    "called_in_order",
    "create_tool_call_accuracy_code_scorer",
]

TOOL_CALL_ACCURACY_CODE_SCORER_ID = "tool-call-accuracy-code-scorer"


def called_in_order(actual: Sequence[str], expected: Sequence[str], strict: bool = False) -> bool:
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
        raise ValueError("give expected_tool or a non-empty expected_tool_order")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        actual = tool_calls_of(ctx.run.output)
        return {
            "expected_tool": expected_tool,
            "expected_tool_order": order,
            "strict_mode": strict_mode,
            "actual_tools": actual,
            "has_tool_calls": bool(actual),
            "correct_tool_called": expected_tool in actual if expected_tool else None,
            "correct_order_called": called_in_order(actual, order, strict_mode) if order else None,
        }

    def score(found: Any) -> float:
        actual: list[str] = found["actual_tools"]
        if not actual:
            return 0.0
        if order:
            return 1.0 if found["correct_order_called"] else 0.0
        if strict_mode:
            return 1.0 if actual == [expected_tool] else 0.0
        return 1.0 if found["correct_tool_called"] else 0.0

    description = (
        f"Checks that the tools were called in the order {' -> '.join(order)}"
        if order
        else f"Checks that the agent called {expected_tool!r}"
    )
    return measured_scorer(
        id=TOOL_CALL_ACCURACY_CODE_SCORER_ID,
        name="Tool Call Accuracy (code)",
        description=description,
        measure=inspect_run,
        score=score,
    )
