"""Measurements of a trajectory against an expectation, with the reference system's result
shapes (camelCase keys) and formulas (@mastra/evals 1.10): step matching (strict, relaxed,
unordered), efficiency budgets, forbidden tools and sequences, and tool retry patterns.

Every score is in 0..1 and rounded half up to two decimals.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .utils import js_json, round_to_two_decimals

__all__ = [
    "COMPARABLE_FIELDS",
    "analyze_tool_failures",
    "check_trajectory_blacklist",
    "check_trajectory_efficiency",
    "compare_trajectories",
    "step_matches",
]

# The data fields compared when an expected step of that type sets them.
COMPARABLE_FIELDS = {
    "tool_call": ("toolArgs", "toolResult", "success"),
    "mcp_tool_call": ("toolArgs", "toolResult", "mcpServer", "success"),
    "model_generation": ("modelId", "promptTokens", "completionTokens", "finishReason"),
    "agent_run": ("agentId",),
    "workflow_step": ("stepId", "status", "output"),
    "workflow_run": ("workflowId", "status"),
    "workflow_conditional": ("conditionCount", "selectedSteps"),
    "workflow_parallel": ("branchCount", "parallelSteps"),
    "workflow_loop": ("loopType", "totalIterations"),
    "workflow_sleep": ("sleepDurationMs", "sleepType"),
    "workflow_wait_event": ("eventName", "eventReceived"),
    "processor_run": ("processorId",),
}
_TOOL_TYPES = ("tool_call", "mcp_tool_call")


def _clamped(score: float) -> float:
    return round_to_two_decimals(max(0.0, min(1.0, score)))


def _same(left: Any, right: Any) -> bool:
    # Values compare by their JSON text as JavaScript writes it, key order included, as the
    # reference system compares them: numbers by value (`2` is `2.0`).
    return js_json(left) == js_json(right)


def step_matches(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """Same name, same type when the expected step names one, and equal data on every field the
    expected step sets (the fields of its type)."""
    if actual.get("name") != expected.get("name"):
        return False
    kind = expected.get("stepType")
    if not kind:
        return True
    if actual.get("stepType") != kind:
        return False
    for field in COMPARABLE_FIELDS.get(kind, ()):
        if expected.get(field) is None:
            continue
        if actual.get(field) is None or not _same(actual[field], expected[field]):
            return False
    return True


def _names(steps: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [step.get("name") for step in steps]


def _result(
    score: float,
    matched: int,
    expected: Sequence[Any],
    actual: Sequence[Any],
    missing: list[Any],
    extra: list[Any],
    out_of_order: list[Any],
    repeated: list[Any],
) -> dict[str, Any]:
    return {
        "score": _clamped(score),
        "matchedSteps": matched,
        "totalExpectedSteps": len(expected),
        "totalActualSteps": len(actual),
        "missingSteps": missing,
        "extraSteps": extra,
        "outOfOrderSteps": out_of_order,
        "repeatedSteps": repeated,
    }


def compare_trajectories(
    actual: Sequence[Mapping[str, Any]],
    expected: Sequence[Mapping[str, Any]],
    *,
    ordering: str = "relaxed",
    allow_repeated_steps: bool = True,
) -> dict[str, Any]:
    """Matched expected steps / expected steps, with the ordering's rules:

    * `strict`: position by position; each actual step beyond the expected count costs half of
      1/expected;
    * `relaxed`: the expected steps in order, other steps allowed between them;
    * `unordered`: each expected step anywhere (each actual step used once).

    Without `allow_repeated_steps`, 0.1 off per tool name called more than once. No expected
    steps: 1 when no step was taken, else 0.
    """
    actual_names = _names(actual)
    expected_names = _names(expected)
    if not expected:
        return _result(0 if actual else 1, 0, [], actual, [], actual_names, [], [])
    counts = Counter(actual_names)
    repeated = [name for name, count in counts.items() if count > 1]
    matched_indices: set[int] = set()
    out_of_order: list[Any] = []
    if ordering == "strict":
        for i in range(max(len(actual), len(expected))):
            name = actual_names[i] if i < len(actual) else None
            if i < len(expected) and name == expected_names[i]:
                if step_matches(actual[i], expected[i]):
                    matched_indices.add(i)
            elif name and name in expected_names:
                out_of_order.append(name)
    elif ordering == "unordered":
        used: set[int] = set()
        for i, wanted in enumerate(expected):
            for j, step in enumerate(actual):
                if j not in used and step_matches(step, wanted):
                    matched_indices.add(i)
                    used.add(j)
                    break
    else:
        last = -1
        for i, wanted in enumerate(expected):
            found = False
            for j in range(last + 1, len(actual)):
                if actual_names[j] == expected_names[i] and step_matches(actual[j], wanted):
                    matched_indices.add(i)
                    last = j
                    found = True
                    break
            if not found and expected_names[i] in actual_names:
                out_of_order.append(expected_names[i])
    matched = len(matched_indices)
    missing = [name for i, name in enumerate(expected_names) if i not in matched_indices]
    expected_set = set(expected_names)
    extra = [name for name in actual_names if name not in expected_set]
    score = matched / len(expected)
    if ordering == "strict" and len(actual) > len(expected):
        score = max(0.0, score - (len(actual) - len(expected)) / len(expected) * 0.5)
    if not allow_repeated_steps and repeated:
        score = max(0.0, score - len(repeated) * 0.1)
    return _result(score, matched, expected, actual, missing, extra, out_of_order, repeated)


def _measurement(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _walk(steps: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    pending = list(steps)
    while pending:
        step = pending.pop()
        found.append(step)
        children = step.get("children")
        if isinstance(children, list):
            pending.extend(children)
    return found


def check_trajectory_efficiency(
    trajectory: Mapping[str, Any],
    *,
    max_steps: float | None = None,
    max_total_tokens: float | None = None,
    max_total_duration_ms: float | None = None,
    no_redundant_calls: bool = True,
) -> dict[str, Any]:
    """The mean of one sub-score per configured budget (1 within it, else 1 - overshoot/budget)
    and, with `no_redundant_calls`, 1 - 0.2 per tool call repeating the previous call's name and
    arguments. Tokens count every model generation, nested ones included; the duration is the
    trajectory's `totalDurationMs`, else the sum of its steps' `durationMs`.

    Raises ValueError for a budget that is not a finite non-negative number, or one whose
    measurements are missing (no token counts, no durations).
    """
    budgets = {
        "maxSteps": max_steps,
        "maxTotalTokens": max_total_tokens,
        "maxTotalDurationMs": max_total_duration_ms,
    }
    for name, limit in budgets.items():
        if limit is not None and not _measurement(limit):
            raise ValueError(f"invalid {name} budget: it must be a finite non-negative number")
    steps: list[Mapping[str, Any]] = list(trajectory.get("steps") or [])
    total_tokens: float = 0
    generations = 0
    for step in _walk(steps):
        if step.get("stepType") != "model_generation":
            continue
        generations += 1
        prompt, completion = step.get("promptTokens"), step.get("completionTokens")
        if max_total_tokens is not None and not (_measurement(prompt) and _measurement(completion)):
            raise ValueError(
                f"cannot check the token budget: model generation {step.get('name')!r} "
                "lacks valid token counts"
            )
        total_tokens += _number(prompt) + _number(completion)
    if max_total_tokens is not None and (generations == 0 or not _measurement(total_tokens)):
        raise ValueError("cannot check the token budget: the trajectory has no model generations")
    given_total = trajectory.get("totalDurationMs")
    duration = (
        given_total
        if given_total is not None
        else sum(_number(step.get("durationMs")) for step in steps)
    )
    if max_total_duration_ms is not None:
        measured = (
            _measurement(given_total)
            if given_total is not None
            else bool(steps) and all(_measurement(s.get("durationMs")) for s in steps)
        )
        if not measured or not _measurement(duration):
            raise ValueError("cannot check the duration budget: durations are missing or invalid")
    redundant = []
    if no_redundant_calls:
        for i in range(1, len(steps)):
            before, now = steps[i - 1], steps[i]
            if (
                before.get("name") == now.get("name")
                and before.get("stepType") == now.get("stepType")
                and before.get("stepType") in _TOOL_TYPES
                and _same(before.get("toolArgs"), now.get("toolArgs"))
            ):
                redundant.append({"name": now.get("name"), "index": i})
    over_steps = max_steps is not None and len(steps) > max_steps
    over_tokens = max_total_tokens is not None and total_tokens > max_total_tokens
    over_duration = max_total_duration_ms is not None and duration > max_total_duration_ms
    parts: list[float] = []
    for limit, used, over in (
        (max_steps, len(steps), over_steps),
        (max_total_tokens, total_tokens, over_tokens),
        (max_total_duration_ms, duration, over_duration),
    ):
        if limit is not None:
            # A zero budget overshot is simply 0 (the reference divides by zero to -Infinity).
            parts.append((max(0.0, 1 - (used - limit) / limit) if limit else 0.0) if over else 1)
    if no_redundant_calls:
        parts.append(max(0.0, 1 - len(redundant) * 0.2) if redundant else 1)
    return {
        "score": _clamped(sum(parts) / len(parts) if parts else 1),
        "totalSteps": len(steps),
        "overStepBudget": over_steps,
        "totalTokens": total_tokens,
        "overTokenBudget": over_tokens,
        "totalDurationMs": duration,
        "overDurationBudget": over_duration,
        "redundantCalls": redundant,
    }


def check_trajectory_blacklist(
    trajectory: Mapping[str, Any],
    *,
    blacklisted_tools: Sequence[str] = (),
    blacklisted_sequences: Sequence[Sequence[str]] = (),
) -> dict[str, Any]:
    """0 when a forbidden tool was called or a forbidden sequence occurs as consecutive top-level
    steps, else 1."""
    names = _names(trajectory.get("steps") or [])
    tools = [tool for tool in blacklisted_tools if tool in names]
    sequences = []
    for sequence in blacklisted_sequences:
        width = len(sequence)
        if width and any(
            names[i : i + width] == list(sequence) for i in range(len(names) - width + 1)
        ):
            sequences.append(list(sequence))
    return {
        "score": 0 if tools or sequences else 1,
        "violatedTools": tools,
        "violatedSequences": sequences,
    }


def analyze_tool_failures(
    trajectory: Mapping[str, Any], *, max_retries_per_tool: int = 2
) -> dict[str, Any]:
    """Retry patterns among the tool-call steps: a run of calls to one tool where a call follows a
    failed one. 1 - 0.2 per retry beyond `max_retries_per_tool` (per tool run)."""
    calls = [s for s in trajectory.get("steps") or [] if s.get("stepType") in _TOOL_TYPES]
    patterns: list[dict[str, Any]] = []
    total = 0
    i = 0
    while i < len(calls):
        name = calls[i].get("name")
        retries = 0
        j = i + 1
        while j < len(calls) and calls[j].get("name") == name:
            if calls[j - 1].get("success") is False:
                retries += 1
            j += 1
        if retries:
            following = calls[j] if j < len(calls) else None
            succeeded = calls[j - 1].get("success") is not False
            fell_back = following is not None and not succeeded
            pattern: dict[str, Any] = {
                "toolName": name,
                "retryCount": retries,
                "fellBackToAlternative": fell_back,
            }
            if fell_back and following is not None:
                pattern["alternativeTool"] = following.get("name")
            pattern["eventuallySucceeded"] = succeeded
            patterns.append(pattern)
            total += retries
        i = j
    excess = sum(max(0, p["retryCount"] - max_retries_per_tool) for p in patterns)
    return {
        "score": _clamped(1 - excess * 0.2) if calls else 1,
        "patterns": patterns,
        "totalRetries": total,
        "excessiveRetryTools": [
            p["toolName"] for p in patterns if p["retryCount"] > max_retries_per_tool
        ],
    }
