"""`run_experiment`: score a dataset with per-scorer error isolation (docs/reference-semantics.md).

Every (item, scorer) pair yields a `ScorerResult`; one failing scorer never affects the others.
A `ScorerRunError` keeps its recovered score in memory, but it is reported as a failure: the
`on_result` hook (and through it the sinks) gets the error, never a success.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ..core.call import AgentCall
from ..core.errors import ScorerRunError
from ..core.not_scorable import NotScorableInfo
from ..core.result import ScorerRun, ScorerRunResult
from ..core.scorer import Scorer
from ..core.sync import synchronous
from ..core.verdict_cache import VerdictCache
from ..errors import ScorewatchError
from ..privacy import PrivacyPolicy, Redaction, redacting
from .caching import evaluation_caching
from .data import EvalItem, Target, is_trajectory_scorer, produce_output, validate_items
from .entries import EvalScorer, as_entries
from .noise import ScorerNoise, noise_of
from .pool import for_each_bounded
from .run import NO_SCORERS, check_repeat, mean, repeats_of

__all__ = [
    "ExperimentItem",
    "ExperimentResult",
    "ExperimentSummary",
    "RunOutcome",
    "ScorerResult",
    "run_experiment",
    "run_experiment_sync",
]


class ScorerResult(BaseModel):
    """One scorer on one item: a score, a failure (`error`), or neither when the scorer declared
    the item not scorable (`not_scorable`), which leaves it out of the scorer's mean."""

    scorer_id: str
    scorer_name: str
    score: float | None = None
    not_scorable: NotScorableInfo | None = None
    reason: str | None = None
    error: str | None = None
    failed_step: str | None = None
    completed_steps: list[str] | None = None
    target_scope: Literal["span", "trajectory"] = "span"


class ExperimentItem(BaseModel):
    """One item's target output and each scorer's result; with `repeat`, `results` holds each
    scorer's first run and `repeats` every run of the scorers judged more than once."""

    index: int
    input: Any = None
    output: Any = None
    ground_truth: Any = None
    target_error: str | None = None
    results: dict[str, ScorerResult] = {}
    repeats: dict[str, list[ScorerResult]] = {}


class ExperimentSummary(BaseModel):
    total_items: int
    failed_items: int
    scorer_failures: dict[str, int]
    not_scorable: dict[str, int] = {}


class ExperimentResult(BaseModel):
    """`scores` is each scorer's mean over items (an item's score: the mean of its runs);
    `noise`, with `repeat` above 1, each scorer's judge noise and item spread."""

    status: Literal["completed", "failed"]
    scores: dict[str, float]
    summary: ExperimentSummary
    items: list[ExperimentItem]
    noise: dict[str, ScorerNoise] | None = None


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """One finished (item, scorer) run, as the `on_result` hook receives it: `call` is the
    item's call with the produced output, `run` what the scorer was given for it, whether or
    not it finished."""

    item_index: int
    scorer: Scorer
    result: ScorerRunResult | None
    error: BaseException | None
    run: ScorerRun | None = None
    # Which judgement of the item this is (0, 1, ... with `repeat`; always 0 without).
    repeat: int = 0
    redaction: Redaction | None = None
    """The run's redactor when a privacy policy applies: what is kept of the run uses it."""
    call: AgentCall | None = None


OnResult = Callable[[RunOutcome], Awaitable[None] | None]


def _scorer_result(scorer: Scorer, outcome: ScorerRunResult | BaseException) -> ScorerResult:
    base = {"scorer_id": scorer.id, "scorer_name": scorer.name}
    if isinstance(outcome, ScorerRunResult):
        reason = outcome.reason if isinstance(outcome.reason, str) else None
        return ScorerResult(
            **base, score=outcome.score, reason=reason, not_scorable=outcome.not_scorable
        )
    if isinstance(outcome, ScorerRunError):
        snapshot = outcome.result
        score = snapshot.score if snapshot is not None else None
        reason = snapshot.reason if snapshot is not None else None
        return ScorerResult(
            **base,
            score=score,
            reason=reason if isinstance(reason, str) else None,
            error=outcome.message,
            failed_step=outcome.failed_step,
            completed_steps=list(outcome.completed_steps),
        )
    return ScorerResult(**base, error=str(outcome) or type(outcome).__name__)


async def run_experiment(
    *,
    data: Sequence[Mapping[str, Any]],
    target: Target | None = None,
    scorers: Sequence[EvalScorer],
    concurrency: int = 1,
    on_item_complete: Callable[[ExperimentItem], Any] | None = None,
    on_result: OnResult | None = None,
    repeat: int = 1,
    privacy: PrivacyPolicy | None = None,
    cache: VerdictCache | None = None,
) -> ExperimentResult:
    """Run every scorer on every item, concurrently per item, isolating failures.

    `on_result` is awaited for every (item, scorer) run as it finishes (stream results to sinks
    from it); an exception it raises is not swallowed. `repeat` judges each item that many times
    with each LLM-judged scorer (model-free scorers run once: they are deterministic) and
    reports each scorer's noise in `noise`. With a `privacy` policy each run gets its redactor
    (`RunOutcome.redaction`, and its telemetry's); the judge reads the items as they are.
    `cache` reuses judge answers as `run_evals(cache=...)` does, never with `repeat` above 1.
    """
    check_repeat(repeat)
    private = privacy is not None and privacy.enabled
    entries = as_entries(scorers)
    items = validate_items(data, has_target=target is not None)
    if not entries:
        raise ScorewatchError("At least one scorer must be provided", code=NO_SCORERS)
    finished: list[ExperimentItem | None] = [None] * len(items)

    async def score_one(scorer: Scorer, item: EvalItem, output: Any, index: int) -> ScorerResult:
        call = item.answered(output)
        run: ScorerRun | None = None
        redaction = privacy.start() if private and privacy is not None else None
        try:
            run = item.scorer_run(output, trajectory=is_trajectory_scorer(scorer))
            with redacting(redaction):
                result: ScorerRunResult | BaseException = await scorer.run(run)
        except Exception as error:
            result = error
        if on_result is not None:
            ok = isinstance(result, ScorerRunResult)
            outcome = RunOutcome(
                item_index=item.index,
                scorer=scorer,
                result=result if ok else None,  # type: ignore[arg-type]
                error=None if ok else result,  # type: ignore[arg-type]
                run=run,
                repeat=index,
                redaction=redaction,
                call=call,
            )
            called = on_result(outcome)
            if inspect.isawaitable(called):
                await called
        scored = _scorer_result(scorer, result)
        if is_trajectory_scorer(scorer):
            scored.target_scope = "trajectory"
        return scored

    async def evaluate(item: EvalItem) -> None:
        call = item.call
        record = ExperimentItem(index=item.index, input=call.input, ground_truth=call.ground_truth)
        try:
            output = await produce_output(target, item)
        except Exception as error:
            record.target_error = str(error)
        else:
            record.output = output
            runs = [(s, k) for s, _ in entries for k in range(repeats_of(s, repeat))]
            results = await asyncio.gather(*(score_one(s, item, output, k) for s, k in runs))
            for (scorer, k), result in zip(runs, results, strict=True):
                if k == 0:
                    record.results[scorer.id] = result
                if repeat > 1 and repeats_of(scorer, repeat) > 1:
                    record.repeats.setdefault(scorer.id, []).append(result)
        finished[item.index] = record
        if on_item_complete is not None:
            called = on_item_complete(record)
            if inspect.isawaitable(called):
                await called

    with evaluation_caching(cache, repeat):
        await for_each_bounded(items, concurrency, evaluate)
    done = [record for record in finished if record is not None]
    return _summarize([scorer for scorer, _ in entries], done, repeat)


def _summarize(scorers: list[Scorer], items: list[ExperimentItem], repeat: int) -> ExperimentResult:
    failures = {scorer.id: 0 for scorer in scorers}
    skipped: dict[str, int] = {}
    # scorer id -> item index -> the scores of that item's runs
    values: dict[str, dict[int, list[float]]] = {scorer.id: {} for scorer in scorers}
    for item in items:
        for scorer_id, first in item.results.items():
            for result in item.repeats.get(scorer_id) or [first]:
                if result.error is not None:
                    failures[scorer_id] += 1
                elif result.not_scorable is not None:
                    skipped[scorer_id] = skipped.get(scorer_id, 0) + 1
                elif result.score is not None:
                    values[scorer_id].setdefault(item.index, []).append(result.score)
    failed_items = sum(1 for item in items if item.target_error is not None)
    item_means = {
        scorer_id: [sum(scores) / len(scores) for scores in by_item.values()]
        for scorer_id, by_item in values.items()
    }
    noise = None
    if repeat > 1:
        repeated = {scorer.id for scorer in scorers if repeats_of(scorer, repeat) > 1}
        noise = {
            scorer_id: found
            for scorer_id, by_item in values.items()
            if scorer_id in repeated and (found := noise_of(by_item))
        }
    return ExperimentResult(
        status="failed" if items and failed_items == len(items) else "completed",
        scores={k: m for k, v in item_means.items() if (m := mean(v)) is not None},
        noise=noise,
        summary=ExperimentSummary(
            total_items=len(items),
            failed_items=failed_items,
            scorer_failures=failures,
            not_scorable=skipped,
        ),
        items=items,
    )


run_experiment_sync = synchronous(run_experiment)
