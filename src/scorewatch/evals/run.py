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
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.result import ScorerRunResult
from ..core.scorer import Scorer
from ..core.sync import synchronous
from ..core.verdict_cache import VerdictCache
from ..errors import ScorewatchError
from ..judge.wire import WireModel
from .caching import evaluation_caching
from .data import (
    EvalItem,
    Target,
    describe_item,
    is_trajectory_scorer,
    produce_output,
    validate_items,
)
from .entries import EvalScorers, ScorerPlan, plan_scorers
from .noise import ScorerNoise, noise_of
from .pool import for_each_bounded

__all__ = [
    "INVALID_REPEAT",
    "NO_SCORERS",
    "SCORER_FAILED",
    "TRAJECTORY_SCORER_FAILED",
    "EvalResult",
    "EvalSummary",
    "GateResult",
    "ItemComplete",
    "ScorerResults",
    "ThresholdResult",
    "check_repeat",
    "repeats_of",
    "run_evals",
    "run_evals_sync",
]

logger = logging.getLogger("scorewatch.evals")

NO_SCORERS = "NO_SCORERS_PROVIDED"
SCORER_FAILED = "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"
TRAJECTORY_SCORER_FAILED = "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_TRAJECTORY"
INVALID_REPEAT = "SCOREWATCH_INVALID_REPEAT"

Verdict = Literal["passed", "scored", "failed"]

ScorerResults = dict[str, Any]
"""Each scorer's result by id; with scorers given by kind, one such mapping per kind
(`{"agent": {...}, "trajectory": {...}}`), as the reference reports them."""


@dataclass(frozen=True, slots=True)
class ItemComplete:
    """What `on_item_complete` receives once per item: the dataset item as given, what the
    target returned (the item's own `output` without a target; a multi-turn item's whole
    conversation), and each scorer's result (`ScorerResults`; with `repeat`, its first run)."""

    item: Mapping[str, Any]
    target_result: Any
    scorer_results: ScorerResults
    # With `repeat`: every run of each scorer judged more than once (the first is also above).
    repeated_results: dict[str, list[ScorerRunResult]] = field(default_factory=dict)


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
    threshold: float | dict[str, Any]


class EvalResult(WireModel):
    """Mean score per scorer id (nested per kind, `{"agent": {...}, "trajectory": {...}}`, when
    the scorers were given by kind), the item count, and a verdict when gates or thresholds
    exist.

    `model_dump(mode="json", by_alias=True)` is the reference's `runEvals` result; `noise`
    (scorewatch's own, only with `repeat` above 1) is each judged scorer's `ScorerNoise`.
    """

    scores: dict[str, float | dict[str, float]]
    summary: EvalSummary
    gate_results: list[GateResult] | None = None
    threshold_results: list[ThresholdResult] | None = None
    verdict: Verdict | None = None
    noise: dict[str, ScorerNoise] | None = None


def check_repeat(repeat: int) -> None:
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ScorewatchError(
            f"repeat must be a whole number >= 1, got {repeat!r}", code=INVALID_REPEAT
        )


def repeats_of(scorer: Scorer, repeat: int) -> int:
    """How often `scorer` judges each item: `repeat` times if a judge answers any of its steps,
    once if it is model-free (it would give the same score again)."""
    return repeat if scorer.has_judge else 1


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _average(values: Sequence[float]) -> float:
    """The reference's average: 0 for no values."""
    return sum(values) / len(values) if values else 0.0


class _Tally:
    """Scores (per kind, None for a plain list), gate scores and not-scorable counts gathered
    across items."""

    def __init__(self, plan: ScorerPlan, gates: list[Scorer]):
        self.scores: dict[str | None, dict[str, list[float]]] = {
            kind: {} for kind, _ in plan.groups
        }
        self.gate_scores: dict[str, list[float]] = {gate.id: [] for gate in gates}
        self.not_scorable: dict[str, int] = {}
        # scorer id -> item index -> scores of its runs (for the noise summary of `repeat`)
        self.by_item: dict[str, dict[int, list[float]]] = {}

    def count_not_scorable(self, scorer_id: str) -> None:
        self.not_scorable[scorer_id] = self.not_scorable.get(scorer_id, 0) + 1

    def add_gate(self, gate_id: str, result: ScorerRunResult) -> None:
        if result.not_scorable is not None or result.score is None:
            self.count_not_scorable(gate_id)
        else:
            self.gate_scores[gate_id].append(result.score)

    def add_item(
        self,
        kind: str | None,
        results: Mapping[str, Sequence[ScorerRunResult]],
        item: int | None = None,
    ) -> None:
        # One scorer's runs per id and item: of two scorers sharing an id, the last one's count.
        bucket = self.scores[kind]
        for scorer_id, runs in results.items():
            for result in runs:
                if result.not_scorable is not None or result.score is None:
                    self.count_not_scorable(scorer_id)
                    continue
                bucket.setdefault(scorer_id, []).append(result.score)
                if item is not None:
                    by_item = self.by_item.setdefault(scorer_id, {})
                    by_item.setdefault(item, []).append(result.score)

    def flat_scores(self, scorer_id: str) -> list[float]:
        return self.scores.get(None, {}).get(scorer_id, [])


def _failure(kind: str | None, scorer: Scorer, item: EvalItem, error: Exception) -> ScorewatchError:
    code, what = {
        None: (SCORER_FAILED, "scorer"),
        "agent": (SCORER_FAILED, "agent scorer"),
        "trajectory": (TRAJECTORY_SCORER_FAILED, "trajectory scorer"),
    }[kind]
    return ScorewatchError(
        f"Failed to run experiment: Error running {what} {scorer.id}: {error}",
        code=code,
        details={"scorerId": scorer.id, "item": describe_item(item), "itemIndex": item.index},
    )


async def run_evals(
    *,
    data: Sequence[Mapping[str, Any]],
    target: Target | None = None,
    scorers: EvalScorers | None = None,
    gates: Sequence[Scorer] | None = None,
    concurrency: int = 1,
    on_item_complete: ItemCallback | None = None,
    target_entity_type: str | None = "agent",
    repeat: int = 1,
    cache: VerdictCache | None = None,
) -> EvalResult:
    """Run `target` on every item (or use the items' `output`), then the gates and scorers.

    `scorers` is a list (a `Scorer`, a `ScorerEntry`, or `{"scorer": s, "threshold": 0.8}`
    each), or the scorers by kind, `{"agent": [...], "trajectory": [...]}`, whose means are
    reported nested by kind. A trajectory scorer (one of the `trajectory` kind, or in a list any
    scorer of `type="trajectory"`; a gate likewise) gets the output's trajectory and the item's
    `expected_trajectory` (or `expectedTrajectory`), with `target_scope="trajectory"`; the others
    get the output with `target_scope="span"`. Every run carries `target_entity_type` (the
    reference's "agent" unless told, e.g. "workflow_run").

    An item with `inputs` (a list of turns) is a conversation: the target gets its turns one
    after another (the same `thread_id` keyword for each, when the target takes one) and the
    scorers get every turn's output in order, with the first turn as the input.

    `on_item_complete` (sync or async) gets one `ItemComplete` per item.

    `repeat` (scorewatch's own) judges each item that many times with each LLM-judged scorer
    (model-free scorers run once: they are deterministic), counts every run in the means, and
    reports each scorer's judge noise and item spread in `noise` (`evals.noise.ScorerNoise`);
    `on_item_complete` then also gets every run in `repeated_results`.

    `cache` (a `VerdictCache`, scorewatch's own) reuses judge answers to identical requests
    (core/verdict_cache.py); without it the caller's context decides (off by default). With
    `repeat` above 1 no answer is ever reused or stored (evals/caching.py).

    Raises `ScorewatchError` with the reference codes, in the reference's order: a bad
    threshold, empty data, a bad item, no scorers; then, while running, a target failure or a
    scorer failure (naming the scorer, and the item as compact JSON). A gate that raises counts 0.
    """
    check_repeat(repeat)
    plan = plan_scorers(scorers)
    gate_list = list(gates or ())
    items = validate_items(data, has_target=target is not None)
    if plan.nested and plan.empty:
        raise ScorewatchError(
            "At least one agent or trajectory scorer must be provided", code=NO_SCORERS
        )
    if plan.empty and not gate_list:
        raise ScorewatchError("At least one scorer or gate must be provided", code=NO_SCORERS)
    tally = _Tally(plan, gate_list)
    completed = 0

    async def evaluate(item: EvalItem) -> None:
        nonlocal completed
        output = await produce_output(target, item)
        for gate in gate_list:
            try:
                run = item.scorer_run(
                    output,
                    trajectory=is_trajectory_scorer(gate),
                    entity_type=target_entity_type,
                    scope="span",
                )
                result = await gate.run(run)
            except Exception:
                logger.warning(
                    "gate %r failed on item %d; it counts 0", gate.id, item.index, exc_info=True
                )
                tally.gate_scores[gate.id].append(0.0)
                continue
            tally.add_gate(gate.id, result)
        results: ScorerResults = {}
        repeated: dict[str, list[ScorerRunResult]] = {}
        for kind, group in plan.groups:
            found: dict[str, list[ScorerRunResult]] = {}
            for scorer in group:
                wants_trajectory = kind == "trajectory" or (
                    kind is None and is_trajectory_scorer(scorer)
                )
                times = repeats_of(scorer, repeat)
                runs: list[ScorerRunResult] = []
                for _ in range(times):
                    try:
                        run = item.scorer_run(
                            output,
                            trajectory=wants_trajectory,
                            entity_type=target_entity_type,
                            scope="span",
                        )
                        runs.append(await scorer.run(run))
                    except Exception as error:
                        raise _failure(kind, scorer, item, error) from error
                found[scorer.id] = runs
                if times > 1:
                    repeated[scorer.id] = runs
            tally.add_item(kind, found, item.index if repeat > 1 else None)
            firsts = {scorer_id: runs[0] for scorer_id, runs in found.items()}
            if kind is None:
                results.update(firsts)
            elif firsts:
                results[kind] = firsts
        if on_item_complete is not None:
            called = on_item_complete(ItemComplete(item.raw, output, results, repeated))
            if inspect.isawaitable(called):
                await called
        completed += 1

    with evaluation_caching(cache, repeat):
        await for_each_bounded(items, concurrency, evaluate)
    summary = _summarize(plan, gate_list, tally, completed)
    if repeat == 1:
        return summary
    judged = {s.id for _, group in plan.groups for s in group if repeats_of(s, repeat) > 1}
    noise = {
        scorer_id: found
        for scorer_id, by_item in tally.by_item.items()
        if scorer_id in judged and (found := noise_of(by_item))
    }
    return summary.model_copy(update={"noise": noise or None})


def _means(values: Mapping[str, list[float]]) -> dict[str, float]:
    # A scorer whose every run was not scorable has no mean: it is left out, not reported as 0.
    return {scorer_id: m for scorer_id, found in values.items() if (m := mean(found)) is not None}


def _summarize(
    plan: ScorerPlan, gates: list[Scorer], tally: _Tally, total_items: int
) -> EvalResult:
    scores: dict[str, float | dict[str, float]] = {}
    for kind, values in tally.scores.items():
        means = _means(values)
        if kind is None:
            scores.update(means)
        elif means:
            scores[kind] = means
    skipped = tally.not_scorable
    gate_results = [
        GateResult(id=gate.id, passed=score >= 1, score=score)
        for gate in gates
        if tally.gate_scores[gate.id] or not skipped.get(gate.id)
        for score in [_average(tally.gate_scores[gate.id])]
    ]
    threshold_results = [
        ThresholdResult(
            id=scorer_id,
            passed=threshold.passes(average),
            average_score=average,
            threshold=threshold.declared(),
        )
        for scorer_id, threshold in plan.thresholds.items()
        if tally.flat_scores(scorer_id) or not skipped.get(scorer_id)
        for average in [_average(tally.flat_scores(scorer_id))]
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
        scores=scores,
        summary=EvalSummary(total_items=total_items, not_scorable=dict(skipped) or None),
        gate_results=gate_results or None,
        threshold_results=threshold_results or None,
        verdict=verdict,
    )


run_evals_sync = synchronous(run_evals)
