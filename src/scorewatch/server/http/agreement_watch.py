"""`AgreementWatch`: serve's labels, agreement and the review sample as metrics.

It counts the labels `POST /v1/labels` stores and keeps the latest agreement of every scorer
version with its stored labels and the counts of each review sample, recomputed after labels
arrive, at start-up (so the numbers survive a restart) and every minute: one refresh at a
time, the statistics on a worker thread, never on the loop serving requests. The event bus
pulls `reading()` when metrics are collected (`scorewatch_labels_total`,
`scorewatch_judge_agreement`, `scorewatch_review_runs`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ...core.events import current_observers
from ...evals.agreement import AgreementReport
from ...evals.labelled import agreement_by_version
from ...sinks.labels import Label, LabelReadings, RunResolver

__all__ = ["AgreementWatch", "ScorerScale", "measures_of"]

logger = logging.getLogger("scorewatch.server")


@dataclass(frozen=True, slots=True)
class ScorerScale:
    """What agreement needs of a scorer: the top of its scale, its direction, its review rate
    (a rate above 0 reports the counts of its review sample) and its categories, if any."""

    top: float
    higher_passes: bool
    review_rate: float = 0.0
    categories: Mapping[str, float] | None = None


def measures_of(report: AgreementReport) -> dict[str, float]:
    """The report's measures by name (only those defined), and `labels`."""
    values: dict[str, float | None] = {"labels": float(report.labels)}
    if report.verdicts is not None:
        values["kappa"] = report.verdicts.kappa.value
        values["accuracy"] = report.verdicts.accuracy.value
        if report.verdicts.false_pass is not None and report.verdicts.false_fail is not None:
            values["false_pass_rate"] = report.verdicts.false_pass.value
            values["false_fail_rate"] = report.verdicts.false_fail.value
    if report.scale is not None:
        values["spearman"] = report.scale.spearman.value
        values["mae"] = report.scale.mae.value
        values["kappa_at_threshold"] = report.scale.at_threshold.kappa.value
    return {name: value for name, value in values.items() if value is not None}


class AgreementWatch:
    def __init__(
        self, scorers: Mapping[str, ScorerScale], resolver: RunResolver, *, every: float = 60.0
    ) -> None:
        self._scorers = dict(scorers)
        self._every = every
        self._ticker: asyncio.Task[None] | None = None
        self._resolver = resolver
        self._labels: Counter[str] = Counter()
        self._agreement: dict[tuple[str, str, str], float] = {}
        self._review: dict[tuple[str, str], int] = {}
        self._dirty: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._unregister: Callable[[], None] | None = None

    def reading(self) -> LabelReadings:
        return LabelReadings(
            labels=dict(self._labels), agreement=dict(self._agreement), review=dict(self._review)
        )

    def start(self) -> None:
        """Report on the current event bus and compute every scorer's agreement once."""
        if self._unregister is None:
            self._unregister = current_observers().register_source(LabelReadings, self.reading)
        self._schedule(self._scorers)
        if self._ticker is None:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        # New runs join the review sample without a label arriving: look again now and then.
        while True:
            await asyncio.sleep(self._every)
            self._schedule(self._scorers)

    def stored(self, labels: Iterable[Label]) -> None:
        """Count `labels` and recompute their scorers' agreement."""
        scorers = set()
        for label in labels:
            self._labels[label.scorer_id] += 1
            scorers.add(label.scorer_id)
        self._schedule(scorers)

    def _schedule(self, scorers: Iterable[str]) -> None:
        self._dirty.update(scorers)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._refresh())

    async def _refresh(self) -> None:
        while self._dirty:
            scorer = min(self._dirty)
            self._dirty.discard(scorer)
            try:
                await self._refresh_one(scorer)
            except Exception as error:
                logger.error("computing agreement of %s failed (%s)", scorer, type(error).__name__)

    async def _refresh_one(self, scorer: str) -> None:
        scale = self._scorers[scorer]
        runs = await self._resolver.labelled(scorer)
        reports = await asyncio.to_thread(
            agreement_by_version,
            scorer,
            runs,
            threshold=scale.top / 2,
            scale=scale.top,
            higher_passes=scale.higher_passes,
            categories=scale.categories,
        )
        fresh = {
            (scorer, report.scorer_version or "", measure): value
            for report in reports
            for measure, value in measures_of(report).items()
        }
        kept = {key: value for key, value in self._agreement.items() if key[0] != scorer}
        self._agreement = {**kept, **fresh}
        if scale.review_rate > 0:
            # The marks were stored with the score rows: the counts are exact, from the index.
            counts = (await self._resolver.review_counts(scorer)).as_dict()
            others = {key: value for key, value in self._review.items() if key[0] != scorer}
            self._review = {**others, **{(scorer, k): v for k, v in counts.items()}}

    async def idle(self) -> None:
        """Wait for the refresh under way (tests, shutdown)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def aclose(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._unregister is not None:
            self._unregister()
            self._unregister = None
