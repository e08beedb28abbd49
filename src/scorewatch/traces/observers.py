"""How telemetry reads what the trace intake did, without the intake knowing telemetry.

A trace intake (serve's `/v1/traces`) registers a zero-argument source returning its cumulative
`TraceCounts`; `scorewatch.telemetry` reads every registered source when its observable counters
are collected (so counting costs the intake nothing more than its own bookkeeping). Nothing
here imports telemetry or the OpenTelemetry SDK.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["TraceCounts", "register_trace_counts", "trace_counts"]

logger = logging.getLogger("scorewatch.traces")


@dataclass(slots=True)
class TraceCounts:
    """Cumulative counts of a trace intake.

    `spans_received`: spans that arrived; `spans_dropped`: spans refused on arrival, by reason
    (`max_bytes`, `max_spans_per_trace`, `duplicate`, `own`: scorewatch's own telemetry);
    `traces_evicted`: traces given up before completing, by reason (`max_traces`, `max_age`);
    `runs`: what became of each selected span, by outcome (`admitted` to the scoring intake,
    `no_content`, `no_output`, `nested`, `evicted`, `queue_full`, `shutdown`, `unavailable`).
    """

    spans_received: int = 0
    spans_dropped: Counter[str] = field(default_factory=Counter)
    traces_evicted: Counter[str] = field(default_factory=Counter)
    runs: Counter[str] = field(default_factory=Counter)

    def add(self, other: TraceCounts) -> None:
        self.spans_received += other.spans_received
        self.spans_dropped.update(other.spans_dropped)
        self.traces_evicted.update(other.traces_evicted)
        self.runs.update(other.runs)


_lock = threading.Lock()
_sources: dict[int, Callable[[], TraceCounts]] = {}


def register_trace_counts(source: Callable[[], TraceCounts]) -> Callable[[], None]:
    """Report `source()` from now on; returns the function that unregisters it."""
    key = id(source)
    with _lock:
        _sources[key] = source

    def unregister() -> None:
        with _lock:
            if _sources.get(key) is source:
                del _sources[key]

    return unregister


def trace_counts() -> TraceCounts:
    """The sum over every registered intake (a source that raises is logged and skipped)."""
    with _lock:
        sources = list(_sources.values())
    total = TraceCounts()
    for source in sources:
        try:
            total.add(source())
        except Exception:
            logger.exception("trace count source %r failed; ignored", source)
    return total
