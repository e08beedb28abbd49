"""`run_evals`: score a dataset with a target and scorers, the reference system's way
(docs/reference-semantics.md).

A scorer error stops the whole run; use `run_experiment` to keep going past failures. A run a
scorer declares not scorable (`not_scorable()`) is counted in `summary.not_scorable` and left out
of that scorer's mean, gate and threshold.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..core.result import ScorerRun, ScorerRunResult
from ..core.scorer import Scorer
from ..core.sync import synchronous
from ..errors import ScorewatchError
from ..judge.wire import WireModel
from .data import EvalItem, Target, describe_item, produce_output, validate_items
from .entries import EvalScorer, Threshold, as_entries
from .pool import for_each_bounded

__all__ = [
    "NO_SCORERS",
    "SCORER_FAILED",
    "EvalResult",
    "EvalSummary",
    "GateResult",
    "ItemComplete",
    "ThresholdResult",
    "run_evals",
    "run_evals_sync",
]

logger = logging.getLogger("scorewatch.evals")

NO_SCORERS = "NO_SCORERS_PROVIDED"
SCORER_FAILED = "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"

Verdict = Literal["passed", "scored", "failed"]


@dataclass(frozen=True, slots=True)
class ItemComplete:
    """What `on_item_complete` receives once per item: the dataset item as given, what the
    target returned (the item's own `output` without a target), and each scorer's result."""

    item: Mapping[str, Any]
    target_result: Any
    scorer_results: dict[str, ScorerRunResult]


ItemCallback = Callable[[ItemComplete], Any]


class EvalSummary(WireModel):
    """`not_scorable` counts, per scorer or gate id, the runs declared not scorable (None when
    there were none, as the reference leaves the key out)."""

    total_items: int
    not_scorable: dict[str, int] | None = None


class GateResult(WireModel):
    id: str
    passed: bool
    score: float


class ThresholdResult(WireModel):
    id: str
    passed: bool
    average_score: float
    threshold: float | dict[str, float]


class EvalResult(WireModel):
    """Mean score per scorer id, the item count, and a verdict when gates or thresholds exist.

    `model_dump(mode="json", by_alias=True)` is the reference's `runEvals` result.
    """

    scores: dict[str, float]
    summary: EvalSummary
    gate_results: list[GateResult] | None = None
    threshold_results: list[ThresholdResult] | None = None
    verdict: Verdict | None = None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _average(values: Sequence[float]) -> float:
    """The reference's average: 0 for no values."""
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class _Runs:
    """How run_evals runs a scorer on an item (the fields the reference sets on these runs)."""

    target_entity_type: str | None

    async def run(self, scorer: Scorer, item: EvalItem, output: Any) -> ScorerRunResult:
        call = replace(item.answered(output), entity_type=self.target_entity_type)
        run = ScorerRun.of_call(call)
        run.target_scope = "span"  # the reference's runEvals scopes every run to a span
        return await scorer.run(run)


class _Tally:
    """Scores, gate scores and not-scorable counts gathered across items."""

    def __init__(self, entries: list[tuple[Scorer, Threshold | None]], gates: list[Scorer]):
        self.scores: dict[str, list[float]] = {scorer.id: [] for scorer, _ in entries}
        self.gate_scores: dict[str, list[float]] = {gate.id: [] for gate in gates}
        self.not_scorable: dict[str, int] = {}

    def count_not_scorable(self, scorer_id: str) -> None:
        self.not_scorable[scorer_id] = self.not_scorable.get(scorer_id, 0) + 1

    def add(self, bucket: dict[str, list[float]], scorer_id: str, result: ScorerRunResult) -> None:
        if result.not_scorable is not None or result.score is None:
            self.count_not_scorable(scorer_id)
        else:
            bucket[scorer_id].append(result.score)


async def _score_gate(
    runs: _Runs, gate: Scorer, item: EvalItem, output: Any, tally: _Tally
) -> None:
    try:
        result = await runs.run(gate, item, output)
    except Exception:
        logger.warning("gate %r failed on item %d; it counts 0", gate.id, item.index, exc_info=True)
        tally.gate_scores[gate.id].append(0.0)
        return
    tally.add(tally.gate_scores, gate.id, result)


async def _run_scorer(runs: _Runs, scorer: Scorer, item: EvalItem, output: Any) -> ScorerRunResult:
    try:
        return await runs.run(scorer, item, output)
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
    target_entity_type: str | None = "agent",
) -> EvalResult:
    """Run `target` on every item (or use the items' `output`), then the gates and scorers.

    A scorer entry is a `Scorer`, a `ScorerEntry`, or `{"scorer": s, "threshold": 0.8}`.
    `on_item_complete` (sync or async) gets one `ItemComplete` per item. Scorer runs carry
    `target_scope="span"` and `target_entity_type` (the reference's "agent" unless told, e.g.
    "workflow_run").

    Raises `ScorewatchError` with the reference codes on empty data, a bad item, no scorers, a bad
    threshold, a target failure or a scorer failure (naming the scorer and the item). A gate that
    raises counts 0.
    """
    entries = as_entries(scorers)
    gate_list = list(gates or ())
    if not entries and not gate_list:
        raise ScorewatchError("Failed to run experiment: No scorers provided", code=NO_SCORERS)
    items = validate_items(data, has_target=target is not None)
    runs = _Runs(target_entity_type)
    tally = _Tally(entries, gate_list)
    completed = 0

    async def evaluate(item: EvalItem) -> None:
        nonlocal completed
        output = await produce_output(target, item)
        for gate in gate_list:
            await _score_gate(runs, gate, item, output, tally)
        results: dict[str, ScorerRunResult] = {}
        for scorer, _ in entries:
            result = await _run_scorer(runs, scorer, item, output)
            results[scorer.id] = result
            tally.add(tally.scores, scorer.id, result)
        if on_item_complete is not None:
            called = on_item_complete(ItemComplete(item.raw, output, results))
            if inspect.isawaitable(called):
                await called
        completed += 1

    await for_each_bounded(items, concurrency, evaluate)
    return _summarize(entries, gate_list, tally, completed)


def _summarize(
    entries: list[tuple[Scorer, Threshold | None]],
    gates: list[Scorer],
    tally: _Tally,
    total_items: int,
) -> EvalResult:
    # A scorer whose every run was not scorable has no mean: it is left out, not reported as 0.
    means = {
        scorer_id: m
        for scorer_id, values in tally.scores.items()
        if (m := mean(values)) is not None
    }
    skipped = tally.not_scorable
    gate_results = [
        GateResult(id=gate.id, passed=score >= 1, score=score)
        for gate in gates
        if tally.gate_scores[gate.id] or not skipped.get(gate.id)
        for score in [_average(tally.gate_scores[gate.id])]
    ]
    threshold_results = [
        ThresholdResult(
            id=scorer.id,
            passed=threshold.passes(average),
            average_score=average,
            threshold=threshold.declared(),
        )
        for scorer, threshold in entries
        if threshold is not None and (tally.scores[scorer.id] or not skipped.get(scorer.id))
        for average in [_average(tally.scores[scorer.id])]
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
        summary=EvalSummary(total_items=total_items, not_scorable=dict(skipped) or None),
        gate_results=gate_results or None,
        threshold_results=threshold_results or None,
        verdict=verdict,
    )


run_evals_sync = synchronous(run_evals)
