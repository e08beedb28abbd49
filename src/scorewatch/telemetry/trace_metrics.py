"""Trace-intake metrics: the telemetry side of the trace counts intakes register on the bus
(`traces.counts.TraceCounts`).

Observable counters read the cumulative counts every trace intake registered on the bus when
they are collected, so the intake pays nothing per span for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from opentelemetry.metrics import Meter, Observation

from ..core.events import Observers
from ..traces.counts import TraceCounts
from . import names
from .pulled import Source, pulled

__all__ = ["TraceMetrics"]


class TraceMetrics:
    """Counters read from `source()`'s trace counts."""

    def __init__(self, meter: Meter, source: Source) -> None:
        meter.create_observable_counter(
            names.METRIC_TRACES_SPANS_RECEIVED,
            callbacks=[pulled(source, _received)],
            description="Spans received on POST /v1/traces",
        )
        counters: tuple[tuple[str, str, str, Callable[[TraceCounts], Counter[str]]], ...] = (
            (names.METRIC_TRACES_SPANS_DROPPED, names.ATTR_TRACES_REASON,
             "Spans not kept on arrival, by reason", _dropped),
            (names.METRIC_TRACES_EVICTED, names.ATTR_TRACES_REASON,
             "Incomplete traces given up, by reason", _evicted),
            (names.METRIC_TRACES_RUNS, names.ATTR_TRACES_OUTCOME,
             "Selected spans: admitted for scoring, or why not", _runs),
            (names.METRIC_TRACES_SESSIONS, names.ATTR_TRACES_OUTCOME,
             "Conversations closed (and scored), by why; turns dropped", _sessions),
        )  # fmt: skip
        for name, attribute, description, read in counters:
            meter.create_observable_counter(
                name, callbacks=[pulled(source, _by(attribute, read))], description=description
            )


def _received(bus: Observers) -> Iterable[Observation]:
    return [Observation(TraceCounts.total(bus).spans_received)]


def _by(
    attribute: str, read: Callable[[TraceCounts], Counter[str]]
) -> Callable[[Observers], Iterable[Observation]]:
    def observe(bus: Observers) -> Iterable[Observation]:
        return [
            Observation(count, {attribute: reason})
            for reason, count in sorted(read(TraceCounts.total(bus)).items())
        ]

    return observe


def _dropped(counts: TraceCounts) -> Counter[str]:
    return counts.spans_dropped


def _evicted(counts: TraceCounts) -> Counter[str]:
    return counts.traces_evicted


def _runs(counts: TraceCounts) -> Counter[str]:
    return counts.runs


def _sessions(counts: TraceCounts) -> Counter[str]:
    return counts.sessions
