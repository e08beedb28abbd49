"""Durable-queue hooks: how telemetry observes the Redis work queue without the queue knowing it.

The queue code (in `scorewatch.server`) reports here; `scorewatch.telemetry` registers a
`QueueObserver` when instrumented and reads the gauges through `queue_gauges()`. Like
`scorewatch.live.observers`, nothing here imports telemetry or the OpenTelemetry SDK, and with no
observer registered each report is one tuple check.

Gauges are pulled: a queue registers a zero-argument source returning its latest `QueueGauges`
(read from Redis by a poller, never at collection time, so a scrape never waits on Redis).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .sources import PulledSources

__all__ = [
    "QueueGauges",
    "QueueObserver",
    "add_queue_observer",
    "queue_gauges",
    "record_dead_lettered",
    "record_redeliveries",
    "register_queue_gauges",
    "remove_queue_observer",
]

logger = logging.getLogger("scorewatch.live.queue_observers")


@dataclass(frozen=True, slots=True)
class QueueGauges:
    """One reading of a stream: `backlog` accepted entries not yet acknowledged, `pending`
    delivered to a worker and not yet acknowledged, `lag` not yet delivered to any worker,
    `dead_letters` entries in the dead-letter stream."""

    stream: str
    backlog: int
    pending: int
    lag: int
    dead_letters: int


class QueueObserver(Protocol):
    def redelivered(self, stream: str, count: int) -> None: ...

    def dead_lettered(self, stream: str, reason: str) -> None: ...


_observers: tuple[QueueObserver, ...] = ()
_sources: PulledSources[QueueGauges | None] = PulledSources("queue gauge", logger)


def add_queue_observer(observer: QueueObserver) -> None:
    global _observers
    if observer not in _observers:
        _observers = (*_observers, observer)


def remove_queue_observer(observer: QueueObserver) -> None:
    global _observers
    _observers = tuple(o for o in _observers if o is not observer)


def record_redeliveries(stream: str, count: int) -> None:
    """`count` entries of `stream` were claimed from a consumer that held them too long."""
    if count <= 0:
        return
    for observer in _observers:
        try:
            observer.redelivered(stream, count)
        except Exception:
            logger.exception("queue observer %r failed; ignored", observer)


def record_dead_lettered(stream: str, reason: str) -> None:
    """One entry of `stream` moved to the dead-letter stream; `reason` is a fixed label."""
    for observer in _observers:
        try:
            observer.dead_lettered(stream, reason)
        except Exception:
            logger.exception("queue observer %r failed; ignored", observer)


def register_queue_gauges(source: Callable[[], QueueGauges | None]) -> Callable[[], None]:
    """Report `source()` in the queue gauges; returns the function that unregisters it."""
    return _sources.register(source)


def queue_gauges() -> list[QueueGauges]:
    """The latest reading of every registered queue, one per stream (a process that both serves
    and works one stream reports it once)."""
    readings: dict[str, QueueGauges] = {}
    for reading in _sources.read():
        if reading is not None:
            readings[reading.stream] = reading
    return list(readings.values())
