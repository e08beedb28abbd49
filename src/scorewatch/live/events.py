"""What live scoring tells the event bus (`core.events.Observers`), defined by live scoring.

Its decisions and runs in flight, the depth of its work queue, and the events and readings of
the Redis stream that carries the same work between processes (`scorewatch serve` appends,
`scorewatch worker` scores: server/queue/). The stream's types are defined here, with the queue
they extend, rather than in server/, so that telemetry, a layer below server, can subscribe to
them; serve and the workers emit them.

>>> from scorewatch.core.events import Observers
>>> bus = Observers()
>>> unregister = bus.register_source(QueueDepth, lambda: QueueDepth(3))
>>> QueueDepth.total(bus)
3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from ..core.events import Observers

__all__ = [
    "LIVE_COUNTS",
    "BudgetReading",
    "BudgetReadings",
    "DeadLettered",
    "Decided",
    "InFlight",
    "LiveDecision",
    "QueueDepth",
    "QueueGauges",
    "Redelivered",
]

LiveDecision = Literal[
    "sampled",
    "not_sampled",
    "filtered",
    "dropped_queue_full",
    "dropped_shutdown",
    "skipped_budget",
]
LIVE_COUNTS: tuple[str, ...] = (*get_args(LiveDecision), "scored", "not_scorable", "failed")
"""What a live queue counts: every decision, then how accepted runs ended."""


@dataclass(frozen=True, slots=True)
class Decided:
    """One sampling or queueing decision for one scorer on one call of live traffic."""

    scorer_id: str
    decision: LiveDecision


@dataclass(frozen=True, slots=True)
class InFlight:
    """A live run started (`delta` +1) or ended, whatever its outcome (-1), where no queue
    reports it (a queue worker's run: `scorewatch worker`); an engine's runs are read from its
    `QueueDepth`."""

    delta: int


@dataclass(frozen=True, slots=True)
class QueueDepth:
    """A pulled reading: the runs waiting in one engine's work queue, and those it has started
    that have not ended (`in_flight`). An engine's runs in flight are read here rather than
    told as `InFlight` events: the queue counts them anyway, so a run needs no event to start
    and none to end."""

    queued: int
    in_flight: int = 0

    @classmethod
    def total(cls, bus: Observers) -> int:
        """The runs waiting in every queue registered on `bus`."""
        return sum(reading.queued for reading in bus.read(cls))

    @classmethod
    def running(cls, bus: Observers) -> int:
        """The runs in flight in every queue registered on `bus`."""
        return sum(reading.in_flight for reading in bus.read(cls))


@dataclass(frozen=True, slots=True)
class BudgetReading:
    """One scorer under a spend budget (live/budgets.py): the sampling probability its budgets
    allow now (`effective_rate`, at most its configured `base_rate`), and what is left of its
    tightest budget (`budget`) this period against that period's `limit_usd`."""

    scorer_id: str
    budget: str
    effective_rate: float
    base_rate: float
    remaining_usd: float
    limit_usd: float


@dataclass(frozen=True, slots=True)
class BudgetReadings:
    """A pulled reading: every budgeted scorer of one engine or intake."""

    readings: tuple[BudgetReading, ...]

    @classmethod
    def latest(cls, bus: Observers) -> list[BudgetReading]:
        """One reading per scorer over every source on `bus` (the last registered wins)."""
        found: dict[str, BudgetReading] = {}
        for group in bus.read(cls):
            for reading in group.readings:
                found[reading.scorer_id] = reading
        return list(found.values())


# -- the Redis stream ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Redelivered:
    """`count` entries of `stream` were claimed from a consumer that held them too long."""

    stream: str
    count: int


@dataclass(frozen=True, slots=True)
class DeadLettered:
    """One entry of `stream` moved to the dead-letter stream; `reason` is a fixed label."""

    stream: str
    reason: str


@dataclass(frozen=True, slots=True)
class QueueGauges:
    """A pulled reading of a stream: `backlog` accepted entries not yet acknowledged, `pending`
    delivered to a worker and not yet acknowledged, `lag` not yet delivered to any worker,
    `dead_letters` entries in the dead-letter stream."""

    stream: str
    backlog: int
    pending: int
    lag: int
    dead_letters: int

    @classmethod
    def latest(cls, bus: Observers) -> list[QueueGauges]:
        """The latest reading of every stream registered on `bus`, one per stream (a process
        that both serves and works one stream reports it once)."""
        return list({reading.stream: reading for reading in bus.read(cls)}.values())
