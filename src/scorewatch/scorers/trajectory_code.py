"""The trajectory scorer (code): accuracy, efficiency, forbidden steps and tool retries in one
score, as the reference system's unified trajectory scorer computes it.

The expectation (`defaults`, overridden key by key by the run's `expected_trajectory`) may set:
`steps` (expected steps; an expected step's `children` is itself an expectation for the steps
nested under the matching actual step), `ordering`, `allowRepeatedSteps`, `maxSteps`,
`maxTotalTokens`, `maxTotalDurationMs`, `noRedundantCalls`, `blacklistedTools`,
`blacklistedSequences`, `maxRetriesPerTool` (snake_case spellings accepted).

Preprocess result: `{"accuracy"?, "efficiency"?, "blacklist"?, "toolFailures", "nested"?,
"config"}` (the reference's shapes; a dimension the expectation does not configure is absent).

Score: 0 when a forbidden tool or sequence occurs (at any nesting level); otherwise the
weighted mean of the configured dimensions (`weights`, defaults accuracy 0.4, efficiency 0.3,
toolFailures 0.2 (only when retries happened), blacklist 0.1, renormalized over the dimensions
present), blended 70/30 with the mean of the nested scores when children are expected; 1 when
nothing is configured. Rounded to two decimals; higher is better; no judge call. The reason is
built from the measurements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import Scorer, StepContext
from ..core.result import Score
from ._card import ScorerCard, prebuilt
from ._trajectory import expectation_of, trajectory_of
from ._trajectory_checks import (
    analyze_tool_failures,
    check_trajectory_blacklist,
    check_trajectory_efficiency,
    compare_trajectories,
)
from .utils import format_number

__all__ = ["TRAJECTORY_CODE_SCORER_ID", "create_trajectory_code_scorer"]

TRAJECTORY_CODE_SCORER_ID = "code-trajectory-scorer"

_CARD = ScorerCard(
    name="trajectory-code",
    id=TRAJECTORY_CODE_SCORER_ID,
    scorer_name="Trajectory Scorer",
    description="Scores a trajectory on accuracy, efficiency, forbidden steps and retries",
    type="trajectory",
)

_DEFAULT_WEIGHTS = {"accuracy": 0.4, "efficiency": 0.3, "toolFailures": 0.2, "blacklist": 0.1}
_WEIGHT_SPELLINGS = {"tool_failures": "toolFailures"}
_BUDGETS = ("maxSteps", "maxTotalTokens", "maxTotalDurationMs", "noRedundantCalls")


def _round(value: float) -> float:
    # Math.round(x * 100) / 100: half up, without the epsilon of round_to_two_decimals.
    return math.floor(value * 100 + 0.5) / 100


def _weights(given: Mapping[str, float] | None) -> dict[str, float]:
    weights = dict(_DEFAULT_WEIGHTS)
    for key, value in (given or {}).items():
        name = _WEIGHT_SPELLINGS.get(key, key)
        if name not in weights:
            raise ValueError(f"unknown weight {key!r}; known: {', '.join(_DEFAULT_WEIGHTS)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise ValueError(f"weight {key!r} must be a number")
        weights[name] = max(0.0, value)
    return weights


def _on_unless_off(value: Any) -> bool:
    """An option that defaults to on: None means the default, as JavaScript's `?? true`."""
    return True if value is None else bool(value)


def _measure(steps: Sequence[Mapping[str, Any]], duration: Any, config: Mapping[str, Any]) -> Any:
    """The four dimensions of one level: (accuracy, efficiency, blacklist, toolFailures)."""
    trajectory = {"steps": steps, "totalDurationMs": duration}
    accuracy = (
        compare_trajectories(
            steps,
            config["steps"],
            ordering=config.get("ordering") or "relaxed",
            allow_repeated_steps=_on_unless_off(config.get("allowRepeatedSteps")),
        )
        if config.get("steps") is not None
        else None
    )
    efficiency = (
        check_trajectory_efficiency(
            trajectory,
            max_steps=config.get("maxSteps"),
            max_total_tokens=config.get("maxTotalTokens"),
            max_total_duration_ms=config.get("maxTotalDurationMs"),
            no_redundant_calls=_on_unless_off(config.get("noRedundantCalls")),
        )
        # A key given counts, even as None (`noRedundantCalls: None` checks redundancy, as the
        # reference's `?? true` does; a None budget was refused when the expectation was read).
        if any(key in config for key in _BUDGETS)
        else None
    )
    blacklist = (
        check_trajectory_blacklist(
            trajectory,
            blacklisted_tools=config.get("blacklistedTools") or (),
            blacklisted_sequences=config.get("blacklistedSequences") or (),
        )
        if config.get("blacklistedTools") or config.get("blacklistedSequences")
        else None
    )
    retries = config.get("maxRetriesPerTool")
    failures = analyze_tool_failures(
        trajectory, max_retries_per_tool=2 if retries is None else retries
    )
    return accuracy, efficiency, blacklist, failures


def _level_score(
    weights: Mapping[str, float], accuracy: Any, efficiency: Any, blacklist: Any, failures: Any
) -> float | None:
    """Weighted mean of the present dimensions, None when none is present."""
    parts = [
        (weights[key], found["score"])
        for key, found in (
            ("accuracy", accuracy),
            ("efficiency", efficiency),
            ("toolFailures", failures if failures and failures["patterns"] else None),
            ("blacklist", blacklist),
        )
        if found is not None
    ]
    if not parts:
        return None
    total = sum(weight for weight, _ in parts)
    return sum(weight / total * value for weight, value in parts) if total > 0 else 1


def _violated(results: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        (r.get("blacklist") or {}).get("score") == 0 or _violated(r.get("nested") or [])
        for r in results
    )


def _drop_absent(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if value is not None}


def _nested(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    weights: Mapping[str, float],
) -> list[dict[str, Any]]:
    """For each expected step with `children`: the first unused actual step of that name (and
    type) has its own children scored against them, recursively."""
    results: list[dict[str, Any]] = []
    used: set[int] = set()
    for step in expected:
        config = step.get("children")
        if config is None:
            continue
        match = next(
            (
                i
                for i, candidate in enumerate(actual)
                if i not in used
                and candidate.get("name") == step.get("name")
                and (not step.get("stepType") or candidate.get("stepType") == step["stepType"])
            ),
            None,
        )
        if match is None:
            wanted = [s.get("name") for s in config.get("steps") or []]
            accuracy = {
                "score": 0,
                "matchedSteps": 0,
                "totalExpectedSteps": len(wanted),
                "totalActualSteps": 0,
                "missingSteps": wanted,
                "extraSteps": [],
                "outOfOrderSteps": [],
                "repeatedSteps": [],
            }
            results.append(
                _drop_absent(
                    {"stepName": step["name"], "score": 0, "accuracy": accuracy if wanted else None}
                )
            )
            continue
        used.add(match)
        found = actual[match]
        children = found.get("children") or []
        accuracy, efficiency, blacklist, failures = _measure(
            children, found.get("durationMs"), config
        )
        deeper = (
            _nested(config["steps"], children, weights) if config.get("steps") is not None else []
        )
        record = {
            "stepName": step["name"],
            "accuracy": accuracy,
            "efficiency": efficiency,
            "blacklist": blacklist,
            "toolFailures": failures,
        }
        if (blacklist and blacklist["score"] == 0) or (deeper and _violated(deeper)):
            results.append(_drop_absent({**record, "score": 0}) | {"nested": deeper})
            continue
        level = _level_score(weights, accuracy, efficiency, blacklist, failures)
        level = 1 if level is None else level
        if deeper:
            level = 0.7 * level + 0.3 * sum(r["score"] for r in deeper) / len(deeper)
        results.append(_drop_absent({**record, "score": _round(level), "nested": deeper or None}))
    return results


@prebuilt(_CARD)
def create_trajectory_code_scorer(
    *,
    defaults: Mapping[str, Any] | None = None,
    weights: Mapping[str, float] | None = None,
) -> Scorer:
    """One score over accuracy, efficiency, forbidden steps and retries (module docstring)."""
    base = expectation_of(defaults or {}, where="defaults") or {}
    weight = _weights(weights)

    def measure(ctx: StepContext) -> dict[str, Any]:
        actual = trajectory_of(ctx.run.output)
        item = expectation_of(ctx.run.expected_trajectory, where="run expected_trajectory") or {}
        config = {**base, **item}
        accuracy, efficiency, blacklist, failures = _measure(
            actual["steps"], actual.get("totalDurationMs"), config
        )
        nested = _nested(config["steps"], actual["steps"], weight) if config.get("steps") else []
        return _drop_absent(
            {
                "accuracy": accuracy,
                "efficiency": efficiency,
                "blacklist": blacklist,
                "toolFailures": failures,
                "nested": nested or None,
                "config": config,
            }
        )

    def score(ctx: StepContext) -> Score:
        found = ctx.results.preprocess_step_result or {}
        blacklist, nested = found.get("blacklist"), found.get("nested")
        if blacklist and blacklist["score"] == 0:
            return 0
        level = _level_score(
            weight,
            found.get("accuracy"),
            found.get("efficiency"),
            blacklist,
            found.get("toolFailures"),
        )
        if level is None and not nested:
            return 1
        level = 1 if level is None else level
        if nested:
            if _violated(nested):
                return 0
            level = 0.7 * level + 0.3 * sum(r["score"] for r in nested) / len(nested)
        return _round(level)

    return (
        _CARD.create_scorer()
        .preprocess(measure)
        .generate_score(score)
        .generate_reason(lambda ctx: _reason(ctx.results.preprocess_step_result or {}, ctx.score))
    )


def _reason(found: Mapping[str, Any], score: Score | None) -> str:
    lines = [f"Score {format_number(score if score is not None else 0)}."]
    blacklist, nested = found.get("blacklist"), found.get("nested") or []
    if blacklist and blacklist["score"] == 0:
        tools = ", ".join(blacklist["violatedTools"])
        sequences = "; ".join(" -> ".join(s) for s in blacklist["violatedSequences"])
        lines.append(
            "Forbidden steps taken"
            + (f"; tools: {tools}" if tools else "")
            + (f"; sequences: {sequences}" if sequences else "")
            + "."
        )
        return "\n".join(lines)
    if _violated(nested):
        where = ", ".join(r["stepName"] for r in nested if _violated([r]))
        lines.append(f"Forbidden steps taken inside: {where}.")
        return "\n".join(lines)
    accuracy = found.get("accuracy")
    if accuracy:
        notes = [f"{accuracy['matchedSteps']} of {accuracy['totalExpectedSteps']} expected steps"]
        for key, label in (
            ("missingSteps", "missing"),
            ("extraSteps", "not expected"),
            ("outOfOrderSteps", "out of order"),
        ):
            if accuracy[key]:
                notes.append(f"{label}: {', '.join(map(str, accuracy[key]))}")
        lines.append(f"Accuracy {format_number(accuracy['score'])}: {'; '.join(notes)}.")
    efficiency = found.get("efficiency")
    if efficiency:
        notes = []
        if efficiency["overStepBudget"]:
            notes.append(f"{efficiency['totalSteps']} steps, over budget")
        if efficiency["overTokenBudget"]:
            notes.append(f"{format_number(efficiency['totalTokens'])} tokens, over budget")
        if efficiency["overDurationBudget"]:
            notes.append(f"{format_number(efficiency['totalDurationMs'])} ms, over budget")
        if efficiency["redundantCalls"]:
            repeated = ", ".join(str(c["name"]) for c in efficiency["redundantCalls"])
            notes.append(f"repeated identical calls: {repeated}")
        summary = "; ".join(notes) or "within budget, no repeated identical calls"
        lines.append(f"Efficiency {format_number(efficiency['score'])}: {summary}.")
    failures = found.get("toolFailures")
    if failures and failures["patterns"]:
        notes = [f"{failures['totalRetries']} retries after failures"]
        if failures["excessiveRetryTools"]:
            notes.append(f"too many for: {', '.join(failures['excessiveRetryTools'])}")
        lines.append(f"Tool failures {format_number(failures['score'])}: {'; '.join(notes)}.")
    if nested:
        shown = ", ".join(f"{r['stepName']} {format_number(r['score'])}" for r in nested)
        lines.append(f"Nested steps: {shown}.")
    return "\n".join(lines)
