"""What serve's two intakes share: deciding a request's items, and counting the decisions.

`InProcessIntake` and `RedisIntake` decide alike (filter, then deterministic sampling on the
trace id, else the run id) and count alike: a decision is counted and told to the event
bus together, and a refused request counts its sampled evaluations as the refusal
(`dropped_queue_full` / `dropped_shutdown`) and nothing else, so a retried request is not counted
twice as `not_sampled`. They differ only in where accepted runs go.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from uuid import uuid4

from ..core.events import LIVE_COUNTS, LiveDecision, current_observers
from ..live.entry import LiveScorerEntry
from ..live.run_ids import request_digest
from ..sinks.base import ScoreSink
from ..sinks.call import ScoredCall
from .intake import ScoreItem, SkipDecision, Skipped

__all__ = ["IntakeCounts", "Plan", "close_sinks", "plan_digest", "plan_items"]

logger = logging.getLogger("scorewatch.server")


@dataclass(frozen=True, slots=True)
class Plan:
    """One item of a request, decided: the scorers that sampled it and the ones that did not."""

    item: ScoreItem
    call: ScoredCall
    sampled: list[str]
    skipped: list[Skipped]


def plan_items(entries: Mapping[str, LiveScorerEntry], items: Sequence[ScoreItem]) -> list[Plan]:
    """Decide every (item, scorer) pair; the scorer ids in the items are known."""
    plans: list[Plan] = []
    for item in items:
        call = _call_of(item)
        sample_key = call.trace_id or call.run_id
        chosen = item.scorers if item.scorers is not None else tuple(entries)
        sampled: list[str] = []
        skipped: list[Skipped] = []
        for scorer_id in dict.fromkeys(chosen):
            decision = _decide(entries[scorer_id], call, sample_key)
            if decision is None:
                sampled.append(scorer_id)
            else:
                skipped.append(Skipped(scorer_id, decision))
        plans.append(Plan(item, call, sampled, skipped))
    return plans


class IntakeCounts:
    """An intake's counts since start: every live decision and outcome, `rejected_requests`,
    then `extra` keys, all zero at first."""

    def __init__(self, *extra: str) -> None:
        self._counts = dict.fromkeys((*LIVE_COUNTS, "rejected_requests", *extra), 0)
        self._lock = threading.Lock()

    def add(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[key] += amount

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def decided(self, scorer_id: str, decision: LiveDecision) -> None:
        """Count one decision and tell the event bus (telemetry) about it."""
        self.add(decision)
        current_observers().decision(scorer_id, decision)

    def skipped(self, plans: Iterable[Plan]) -> None:
        """Count the decisions not to score (filtered, not sampled) of admitted items."""
        for plan in plans:
            for skip in plan.skipped:
                self.decided(skip.scorer, skip.decision)

    def refused(self, plans: Iterable[Plan], decision: LiveDecision) -> None:
        """A refused request: its sampled evaluations count as `decision`, nothing else."""
        refused = 0
        for plan in plans:
            for scorer_id in plan.sampled:
                current_observers().decision(scorer_id, decision)
                refused += 1
        with self._lock:
            self._counts[decision] += refused
            self._counts["rejected_requests"] += 1


async def close_sinks(sinks: Iterable[ScoreSink]) -> None:
    """Close every sink; a failure is logged (by type: its text may quote content) and the
    next sink is still closed."""
    for sink in sinks:
        try:
            await sink.aclose()
        except Exception as error:
            logger.error(
                "closing sink %r failed (%s)", getattr(sink, "name", sink), type(error).__name__
            )


def plan_digest(plan: Plan) -> str:
    """What tells this item's request apart from any other (`request_run_id`): every field
    the client sent, none that the service made up (like a missing run id's uuid)."""
    item = plan.item
    return request_digest(
        item.target,
        item.trace_id,
        item.span_id,
        item.run_id,
        item.input,
        item.output,
        item.ground_truth,
        item.request_context,
        dict(item.metadata) if item.metadata else None,
    )


def _call_of(item: ScoreItem) -> ScoredCall:
    return ScoredCall(
        input=item.input,
        output=item.output,
        target=item.target,
        trace_id=item.trace_id,
        span_id=item.span_id,
        run_id=item.run_id or uuid4().hex,
        request_context=item.request_context,
        ground_truth=item.ground_truth,
        metadata=dict(item.metadata) if item.metadata else None,
        score_source=item.score_source,
    )


def _decide(entry: LiveScorerEntry, call: ScoredCall, sample_key: str) -> SkipDecision | None:
    """None when the call is sampled, else why it is skipped."""
    if entry.filter is not None:
        try:
            keep = entry.filter(call)
        except Exception as error:
            logger.warning(
                "the filter of scorer %r raised %s; call skipped (filtered)",
                entry.scorer.id,
                type(error).__name__,
            )
            return "filtered"
        if not keep:
            return "filtered"
    return None if entry.sampling.should_sample(sample_key) else "not_sampled"
