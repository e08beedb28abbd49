"""Work-queue metrics: the telemetry side of the Redis stream's events and readings
(`live.events`: `Redelivered`, `DeadLettered`, `QueueGauges`).

Gauges (backlog, pending, lag, dead letters) are observed from the latest readings the queue
processes registered on the bus; every process attached to a stream reports the same
stream-wide values, labelled by stream, so dashboards take `max by (stream)`. Counters
(redeliveries, dead-lettered) count what this process did; dashboards `sum` them.
"""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry.metrics import Counter, Meter

from ..live.events import DeadLettered, QueueGauges, Redelivered
from . import names
from .pulled import Source, per_reading, pulled

__all__ = ["QueueMetrics"]


class QueueMetrics:
    """The queue counters, fed by `TelemetryObserver`, and the gauges, read from `source()`."""

    def __init__(self, meter: Meter, source: Source) -> None:
        self._redeliveries: Counter = meter.create_counter(
            names.METRIC_QUEUE_REDELIVERIES,
            description="Work-queue entries claimed again after a consumer held them too long",
        )
        self._dead_lettered: Counter = meter.create_counter(
            names.METRIC_QUEUE_DEAD_LETTERED,
            description="Work-queue entries moved to the dead-letter stream, by reason",
        )
        gauges: tuple[tuple[str, str, Callable[[QueueGauges], int]], ...] = (
            (names.METRIC_QUEUE_BACKLOG, "Accepted work not yet acknowledged", _backlog),
            (names.METRIC_QUEUE_PENDING, "Work delivered to a worker, not yet acknowledged",
             _pending),
            (names.METRIC_QUEUE_LAG, "Work not yet delivered to any worker", _lag),
            (names.METRIC_QUEUE_DEAD_LETTERS, "Entries in the dead-letter stream", _dead),
        )  # fmt: skip
        for name, description, read in gauges:
            meter.create_observable_gauge(
                name,
                callbacks=[pulled(source, per_reading(QueueGauges.latest, read, _stream))],
                description=description,
            )

    def redelivered(self, event: Redelivered) -> None:
        self._redeliveries.add(event.count, {names.ATTR_QUEUE_STREAM: event.stream})

    def dead_lettered(self, event: DeadLettered) -> None:
        self._dead_lettered.add(
            1, {names.ATTR_QUEUE_STREAM: event.stream, names.ATTR_QUEUE_REASON: event.reason}
        )


def _stream(reading: QueueGauges) -> dict[str, str]:
    return {names.ATTR_QUEUE_STREAM: reading.stream}


def _backlog(reading: QueueGauges) -> int:
    return reading.backlog


def _pending(reading: QueueGauges) -> int:
    return reading.pending


def _lag(reading: QueueGauges) -> int:
    return reading.lag


def _dead(reading: QueueGauges) -> int:
    return reading.dead_letters
