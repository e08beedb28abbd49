"""Quick checks: tiny deterministic scorers for the assertions evals write most often.

Each factory returns an ordinary scorer (a preprocess function that records what it found, and a
generate_score function) whose score is 1 when the check passes and 0 when it fails. Range 0..1,
higher is better, no judge call. The output may be a string, OpenAI-style chat messages or the
reference system's agent messages; text checks read every assistant message of the output, tool
checks read every tool call (`scorers.utils.extract_tool_calls`).

    includes("sunny")            the output contains the text
    excludes("error")            the output does not contain the text
    equals("42")                 the output is the text (after trimming)
    matches(r"\\d+°[CF]")        the regular expression is found (`exact=True`: whole output)
    called_tool("get_weather")   the tool was called (at least `times` times)
    did_not_call("delete_user")  the tool was not called
    max_tool_calls(3)            at most that many tool calls
    tool_order([...])            the tools were called in that order (others may come between)
    used_no_tools()              no tool was called
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..core import Scorer, StepContext
from ._measured import measured_scorer
from ._text import all_response_text, tool_calls_of
from .utils import ToolName

__all__ = [
    "called_tool",
    "did_not_call",
    "equals",
    "excludes",
    "includes",
    "matches",
    "max_tool_calls",
    "tool_order",
    "used_no_tools",
]


def _check(*, id: str, name: str, description: str, inspect_run: Any) -> Scorer:
    return measured_scorer(
        id=id,
        name=name,
        description=description,
        measure=inspect_run,
        score=lambda found: 1.0 if isinstance(found, dict) and found.get("passed") is True else 0.0,
    )


def _text_check(
    expected: str,
    *,
    id: str,
    name: str,
    description: str,
    ignore_case: bool,
    test: Any,
    separator: str = " ",
) -> Scorer:
    if not isinstance(expected, str):
        raise TypeError(f"{id}: expected a string, got {type(expected).__name__}")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        output = all_response_text(ctx.run.output, separator)
        target = expected
        if ignore_case:
            output, target = output.casefold(), target.casefold()
        return {"output": output, "target": target, "passed": bool(test(output, target))}

    return _check(id=id, name=name, description=description, inspect_run=inspect_run)


def includes(expected: str, *, ignore_case: bool = True, id: str | None = None) -> Scorer:
    """1 when the output contains `expected` (case-insensitive unless `ignore_case=False`)."""
    return _text_check(
        expected,
        id=id or "check-includes",
        name="Includes Check",
        description=f"Checks that the output includes {expected!r}",
        ignore_case=ignore_case,
        test=lambda output, target: target in output,
    )


def excludes(unwanted: str, *, ignore_case: bool = True, id: str | None = None) -> Scorer:
    """1 when the output does NOT contain `unwanted` (case-insensitive unless told otherwise)."""
    return _text_check(
        unwanted,
        id=id or "check-excludes",
        name="Excludes Check",
        description=f"Checks that the output does not include {unwanted!r}",
        ignore_case=ignore_case,
        test=lambda output, target: target not in output,
    )


def equals(
    expected: str, *, ignore_case: bool = True, strip: bool = True, id: str | None = None
) -> Scorer:
    """1 when the output equals `expected`; surrounding whitespace is ignored unless
    `strip=False`, case unless `ignore_case=False`."""

    def same(output: str, target: str) -> bool:
        return (output.strip() == target.strip()) if strip else output == target

    return _text_check(
        expected,
        id=id or "check-equals",
        name="Equals Check",
        description=f"Checks that the output equals {expected!r}",
        ignore_case=ignore_case,
        test=same,
        separator="",
    )


def matches(
    pattern: str | re.Pattern[str], *, exact: bool = False, id: str | None = None
) -> Scorer:
    """1 when the regular expression is found in the output (`re.search`), or with `exact=True`
    when it matches the whole output (`re.fullmatch`). Flags come with a compiled pattern."""
    compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        output = all_response_text(ctx.run.output, "")
        found = compiled.fullmatch(output) if exact else compiled.search(output)
        return {"output": output, "pattern": compiled.pattern, "passed": found is not None}

    return _check(
        id=id or "check-matches",
        name="Matches Check",
        description=f"Checks that the output matches /{compiled.pattern}/",
        inspect_run=inspect_run,
    )


def _tools_of(ctx: StepContext) -> list[ToolName]:
    return tool_calls_of(ctx.run.output)


def called_tool(tool_name: str, *, times: int = 1, id: str | None = None) -> Scorer:
    """1 when `tool_name` was called at least `times` times."""
    if times < 1:
        raise ValueError(f"times must be at least 1, got {times}")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        count = _tools_of(ctx).count(tool_name)
        return {
            "tool_name": tool_name,
            "expected_times": times,
            "actual_count": count,
            "passed": count >= times,
        }

    at_least = f" at least {times} times" if times > 1 else ""
    return _check(
        id=id or "check-called-tool",
        name="Called Tool Check",
        description=f"Checks that {tool_name!r} was called{at_least}",
        inspect_run=inspect_run,
    )


def did_not_call(tool_name: str, *, id: str | None = None) -> Scorer:
    """1 when `tool_name` was never called."""

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        count = _tools_of(ctx).count(tool_name)
        return {"tool_name": tool_name, "count": count, "passed": count == 0}

    return _check(
        id=id or "check-did-not-call",
        name="Did Not Call Check",
        description=f"Checks that {tool_name!r} was not called",
        inspect_run=inspect_run,
    )


def max_tool_calls(limit: int, *, id: str | None = None) -> Scorer:
    """1 when the output made at most `limit` tool calls."""
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        count = len(_tools_of(ctx))
        return {"count": count, "max": limit, "passed": count <= limit}

    return _check(
        id=id or "check-max-tool-calls",
        name="Max Tool Calls Check",
        description=f"Checks that no more than {limit} tool calls were made",
        inspect_run=inspect_run,
    )


def tool_order(expected_order: Sequence[str], *, id: str | None = None) -> Scorer:
    """1 when the tools in `expected_order` were called in that order; other calls may come
    between them."""
    expected = list(expected_order)
    if not expected:
        raise ValueError("expected_order must name at least one tool")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        tools = _tools_of(ctx)
        position = 0
        for tool in tools:
            if position < len(expected) and tool == expected[position]:
                position += 1
        return {
            "actual_tools": tools,
            "expected_order": expected,
            "passed": position == len(expected),
        }

    return _check(
        id=id or "check-tool-order",
        name="Tool Order Check",
        description=f"Checks the tool call order: {' -> '.join(expected)}",
        inspect_run=inspect_run,
    )


def used_no_tools(*, id: str | None = None) -> Scorer:
    """1 when no tool was called."""

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        count = len(_tools_of(ctx))
        return {"count": count, "passed": count == 0}

    return _check(
        id=id or "check-used-no-tools",
        name="Used No Tools Check",
        description="Checks that no tools were called",
        inspect_run=inspect_run,
    )
