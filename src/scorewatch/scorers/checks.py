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
from ._card import ScorerCard, prebuilt
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


def _card(name: str, scorer_name: str, description: str) -> ScorerCard:
    """A check's card: its id is its short name."""
    return ScorerCard(name=name, id=name, scorer_name=scorer_name, description=description)


_INCLUDES = _card("check-includes", "Includes Check", "1 when the output contains the text")
_EXCLUDES = _card("check-excludes", "Excludes Check", "1 when the output does not contain the text")
_EQUALS = _card("check-equals", "Equals Check", "1 when the output equals the text")
_MATCHES = _card(
    "check-matches", "Matches Check", "1 when the output matches the regular expression"
)
_CALLED_TOOL = _card("check-called-tool", "Called Tool Check", "1 when the tool was called")
_DID_NOT_CALL = _card("check-did-not-call", "Did Not Call Check", "1 when the tool was not called")
_MAX_TOOL_CALLS = _card(
    "check-max-tool-calls",
    "Max Tool Calls Check",
    "1 when at most that many tool calls were made",
)
_TOOL_ORDER = _card(
    "check-tool-order", "Tool Order Check", "1 when the tools were called in that order"
)
_USED_NO_TOOLS = _card("check-used-no-tools", "Used No Tools Check", "1 when no tool was called")


def _check(card: ScorerCard, *, id: str | None, description: str, inspect_run: Any) -> Scorer:
    return measured_scorer(
        card,
        id=id,
        description=description,
        measure=inspect_run,
        score=lambda found: 1.0 if isinstance(found, dict) and found.get("passed") is True else 0.0,
    )


def _text_check(
    expected: str,
    card: ScorerCard,
    *,
    id: str | None,
    description: str,
    ignore_case: bool,
    test: Any,
    separator: str = " ",
) -> Scorer:
    if not isinstance(expected, str):
        raise TypeError(f"{id or card.id}: expected a string, got {type(expected).__name__}")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        output = all_response_text(ctx.run.output, separator)
        target = expected
        if ignore_case:
            output, target = output.casefold(), target.casefold()
        return {"output": output, "target": target, "passed": bool(test(output, target))}

    return _check(card, id=id, description=description, inspect_run=inspect_run)


@prebuilt(_INCLUDES)
def includes(expected: str, *, ignore_case: bool = True, id: str | None = None) -> Scorer:
    """1 when the output contains `expected` (case-insensitive unless `ignore_case=False`)."""
    return _text_check(
        expected,
        _INCLUDES,
        id=id,
        description=f"Checks that the output includes {expected!r}",
        ignore_case=ignore_case,
        test=lambda output, target: target in output,
    )


@prebuilt(_EXCLUDES)
def excludes(unwanted: str, *, ignore_case: bool = True, id: str | None = None) -> Scorer:
    """1 when the output does NOT contain `unwanted` (case-insensitive unless told otherwise)."""
    return _text_check(
        unwanted,
        _EXCLUDES,
        id=id,
        description=f"Checks that the output does not include {unwanted!r}",
        ignore_case=ignore_case,
        test=lambda output, target: target not in output,
    )


@prebuilt(_EQUALS)
def equals(
    expected: str, *, ignore_case: bool = True, strip: bool = True, id: str | None = None
) -> Scorer:
    """1 when the output equals `expected`; surrounding whitespace is ignored unless
    `strip=False`, case unless `ignore_case=False`."""

    def same(output: str, target: str) -> bool:
        return (output.strip() == target.strip()) if strip else output == target

    return _text_check(
        expected,
        _EQUALS,
        id=id,
        description=f"Checks that the output equals {expected!r}",
        ignore_case=ignore_case,
        test=same,
        separator="",
    )


@prebuilt(_MATCHES)
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
        _MATCHES,
        id=id,
        description=f"Checks that the output matches /{compiled.pattern}/",
        inspect_run=inspect_run,
    )


def _tools_of(ctx: StepContext) -> list[ToolName]:
    return tool_calls_of(ctx.run.output)


@prebuilt(_CALLED_TOOL)
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
        _CALLED_TOOL,
        id=id,
        description=f"Checks that {tool_name!r} was called{at_least}",
        inspect_run=inspect_run,
    )


@prebuilt(_DID_NOT_CALL)
def did_not_call(tool_name: str, *, id: str | None = None) -> Scorer:
    """1 when `tool_name` was never called."""

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        count = _tools_of(ctx).count(tool_name)
        return {"tool_name": tool_name, "count": count, "passed": count == 0}

    return _check(
        _DID_NOT_CALL,
        id=id,
        description=f"Checks that {tool_name!r} was not called",
        inspect_run=inspect_run,
    )


@prebuilt(_MAX_TOOL_CALLS)
def max_tool_calls(limit: int, *, id: str | None = None) -> Scorer:
    """1 when the output made at most `limit` tool calls."""
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        count = len(_tools_of(ctx))
        return {"count": count, "max": limit, "passed": count <= limit}

    return _check(
        _MAX_TOOL_CALLS,
        id=id,
        description=f"Checks that no more than {limit} tool calls were made",
        inspect_run=inspect_run,
    )


@prebuilt(_TOOL_ORDER)
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
        _TOOL_ORDER,
        id=id,
        description=f"Checks the tool call order: {' -> '.join(expected)}",
        inspect_run=inspect_run,
    )


@prebuilt(_USED_NO_TOOLS)
def used_no_tools(*, id: str | None = None) -> Scorer:
    """1 when no tool was called."""

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        count = len(_tools_of(ctx))
        return {"count": count, "passed": count == 0}

    return _check(
        _USED_NO_TOOLS,
        id=id,
        description="Checks that no tools were called",
        inspect_run=inspect_run,
    )
