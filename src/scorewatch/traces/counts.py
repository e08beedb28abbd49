"""What a trace intake tells the event bus (`core.events.Observers`): its cumulative counts, a
reading the intake registers (`register_source(TraceCounts, ...)`) and telemetry pulls when it
collects, so counting costs the intake nothing per span.

>>> from scorewatch.core.events import Observers
>>> bus = Observers()
>>> unregister = bus.register_source(TraceCounts, lambda: TraceCounts(spans_received=2))
>>> TraceCounts.total(bus).spans_received
2
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..core.events import Observers

__all__ = ["TraceCounts"]


@dataclass(slots=True)
class TraceCounts:
    """Cumulative counts of a trace intake (serve's `POST /v1/traces`).

    `spans_received`: spans that arrived; `spans_dropped`: spans not kept, by reason
    (`max_bytes`, `max_spans_per_trace`, `duplicate`, `own`: scorewatch's own telemetry);
    `traces_evicted`: traces given up before completing, by reason (`max_traces`, `max_age`);
    `runs`: what became of each selected span, by outcome (`admitted` for scoring, or
    `no_content`, `no_output`, `nested`, `evicted`, `invalid_target`, `queue_full`,
    `shutdown`, `unavailable`; with `[traces.sessions]` also `session_only`: a turn scored only
    in its session, `no_scorer`: a run without a conversation when every scorer scores
    sessions; an admitted session counts as `admitted`); `sessions`: what became of
    conversations (`[traces.sessions]`), by outcome (`closed_idle`, `closed_max_turns`,
    `closed_end`, `closed_flush` at shutdown, `closed_max_sessions` and `closed_max_bytes`
    early on a bound, `turns_dropped_too_large`)."""

    spans_received: int = 0
    spans_dropped: Counter[str] = field(default_factory=Counter)
    traces_evicted: Counter[str] = field(default_factory=Counter)
    runs: Counter[str] = field(default_factory=Counter)
    sessions: Counter[str] = field(default_factory=Counter)

    def add(self, other: TraceCounts) -> None:
        self.spans_received += other.spans_received
        self.spans_dropped.update(other.spans_dropped)
        self.traces_evicted.update(other.traces_evicted)
        self.runs.update(other.runs)
        self.sessions.update(other.sessions)

    @classmethod
    def total(cls, bus: Observers) -> TraceCounts:
        """The sum over every trace intake registered on `bus`."""
        total = cls()
        for counts in bus.read(cls):
            total.add(counts)
        return total
