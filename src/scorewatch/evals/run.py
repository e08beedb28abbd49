"""`run_evals`: score a dataset with a target and scorers, the reference system's way (spec §10).

A scorer error stops the whole run; use `run_experiment` to keep going past failures.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ..core.result import ScorerRunResult
from ..core.scorer import Scorer
from ..core.sync import run_coroutine_sync
from ..errors import ScorewatchError
from .data import EvalItem, Target, describe_item, produce_output, validate_items
from .entries import EvalScorer, Threshold, as_entries
from .pool import for_each_bounded

__all__ = [
    "NO_SCORERS",
    "SCORER_FAILED",
    "EvalResult",
    "EvalSummary",
    "GateResult",
    "ThresholdResult",
    "run_evals",
    "run_evals_sync",
]

logger = logging.getLogger("scorewatch.evals")

NO_SCORERS = "NO_SCORERS_PROVIDED"
SCORER_FAILED = "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"

Verdict = Literal["passed", "scored", "failed"]
ItemCallback = Callable[[Mapping[str, Any], Any, dict[str, ScorerRunResult]], Any]


class EvalSummary(BaseModel):
    total_items: int


class GateResult(BaseModel):
    scorer_id: str
    mean: float
    passed: bool


class ThresholdResult(BaseModel):
    scorer_id: str
    mean: float | None
    min: float | None
    max: float | None
    passed: bool


class EvalResult(BaseModel):
    """Mean score per scorer id, the item count, and a verdict when gates or thresholds exist."""

    scores: dict[str, float]
    summary: EvalSummary
    verdict: Verdict | None = None
    gate_results: list[GateResult] | None = None
    threshold_results: list[ThresholdResult] | None = None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


async def _score_gate(gate: Scorer, item: EvalItem, output: Any) -> float | None:
    try:
        result = await gate.run(
            input=item.input,
            output=output,
            ground_truth=item.ground_truth,
            request_context=item.request_context,
            score_source="experiment",
        )
    except Exception:
        logger.warning("gate %r failed on item %d; it counts 0", gate.id, item.index, exc_info=True)
        return 0.0
    return result.score


async def _run_scorer(scorer: Scorer, item: EvalItem, output: Any) -> ScorerRunResult:
    try:
        return await scorer.run(
            input=item.input,
            output=output,
            ground_truth=item.ground_truth,
            request_context=item.request_context,
            score_source="experiment",
        )
    except Exception as error:
        raise ScorewatchError(
            f"Failed to run experiment: Error running scorer {scorer.id} on item {item.index}: "
            f"{error}",
            code=SCORER_FAILED,
            details={"scorerId": scorer.id, "item": describe_item(item)},
        ) from error


async def run_evals(
    *,
    data: Sequence[Mapping[str, Any]],
    target: Target | None = None,
    scorers: Sequence[EvalScorer] | None = None,
    gates: Sequence[Scorer] | None = None,
    concurrency: int = 1,
    on_item_complete: ItemCallback | None = None,
) -> EvalResult:
    """Run `target` on every item (or use the items' `output`), then the scorers in order.

    Raises `ScorewatchError` with the reference codes on empty data, a bad item, no scorers, a bad
    threshold, a target failure or a scorer failure (naming the scorer and the item). A gate that
    raises counts 0.
    """
    entries = as_entries(scorers)
    gate_list = list(gates or ())
    if not entries and not gate_list:
        raise ScorewatchError("Failed to run experiment: No scorers provided", code=NO_SCORERS)
    items = validate_items(data, has_target=target is not None)
    scores: dict[str, list[float]] = {scorer.id: [] for scorer, _ in entries}
    gate_scores: dict[str, list[float]] = {gate.id: [] for gate in gate_list}

    async def evaluate(item: EvalItem) -> None:
        output = await produce_output(target, item)
        for gate in gate_list:
            gate_score = await _score_gate(gate, item, output)
            if gate_score is not None:
                gate_scores[gate.id].append(gate_score)
        results: dict[str, ScorerRunResult] = {}
        for scorer, _ in entries:
            result = await _run_scorer(scorer, item, output)
            results[scorer.id] = result
            if result.score is not None:
                scores[scorer.id].append(result.score)
        if on_item_complete is not None:
            called = on_item_complete(item.raw, output, results)
            if inspect.isawaitable(called):
                await called

    await for_each_bounded(items, concurrency, evaluate)
    return _summarize(entries, gate_list, scores, gate_scores, len(items))


def _summarize(
    entries: list[tuple[Scorer, Threshold | None]],
    gates: list[Scorer],
    scores: dict[str, list[float]],
    gate_scores: dict[str, list[float]],
    total_items: int,
) -> EvalResult:
    means = {
        scorer_id: m for scorer_id, values in scores.items() if (m := mean(values)) is not None
    }
    gate_results = [
        GateResult(scorer_id=gate.id, mean=m, passed=m >= 1.0)
        for gate in gates
        for m in [mean(gate_scores[gate.id]) or 0.0]
    ]
    threshold_results = [
        ThresholdResult(
            scorer_id=scorer.id,
            mean=means.get(scorer.id),
            min=threshold.min,
            max=threshold.max,
            passed=scorer.id in means and threshold.passes(means[scorer.id]),
        )
        for scorer, threshold in entries
        if threshold is not None
    ]
    verdict: Verdict | None = None
    if gate_results or threshold_results:
        if not all(g.passed for g in gate_results):
            verdict = "failed"
        elif not all(t.passed for t in threshold_results):
            verdict = "scored"
        else:
            verdict = "passed"
    return EvalResult(
        scores=means,
        summary=EvalSummary(total_items=total_items),
        verdict=verdict,
        gate_results=gate_results or None,
        threshold_results=threshold_results or None,
    )


def run_evals_sync(**kwargs: Any) -> EvalResult:
    """`run_evals` for code without an event loop."""
    return run_coroutine_sync(run_evals(**kwargs))
