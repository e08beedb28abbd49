"""Live-scoring hooks: how an add-on (telemetry) observes live decisions without live knowing it.

`live` sits above `telemetry` in the import order, so live code never imports telemetry (nor the
OpenTelemetry SDK). Instead live code calls the module functions below; `scorewatch.telemetry`
registers an observer implementing `LiveObserver` when instrumented. With no observer registered
each call is one tuple check. An observer that raises is logged and ignored.

Queue depth is pulled, not pushed: a live queue registers a depth source (a zero-argument
callable) and telemetry's observable gauge sums the registered sources at collection time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal, Protocol, get_args

from .sources import PulledSources

__all__ = [
    "LIVE_COUNTS",
    "LiveDecision",
    "LiveObserver",
    "add_live_observer",
    "current_live_observers",
    "record_closed",
    "record_decision",
    "record_in_flight",
    "record_sink_error",
    "register_queue_depth",
    "remove_live_observer",
    "total_queue_depth",
]

logger = logging.getLogger("scorewatch.live.observers")

LiveDecision = Literal[
    "sampled", "not_sampled", "filtered", "dropped_queue_full", "dropped_shutdown"
]
LIVE_COUNTS: tuple[str, ...] = (*get_args(LiveDecision), "scored", "not_scorable", "failed")
"""What a live queue counts: every decision, then how accepted runs ended."""


class LiveObserver(Protocol):
    def decision(self, scorer_id: str, decision: LiveDecision) -> None: ...

    def in_flight(self, delta: int) -> None: ...

    def sink_error(self, sink: str) -> None: ...

    # Optional: `closed(timeout)`, called once a `LiveScoring` has closed (see `record_closed`).


_observers: tuple[LiveObserver, ...] = ()
_depth_sources: PulledSources[int] = PulledSources("live queue depth", logger)


def add_live_observer(observer: LiveObserver) -> None:
    global _observers
    if observer not in _observers:
        _observers = (*_observers, observer)


def remove_live_observer(observer: LiveObserver) -> None:
    global _observers
    _observers = tuple(o for o in _observers if o is not observer)


def current_live_observers() -> tuple[LiveObserver, ...]:
    return _observers


def record_decision(scorer_id: str, decision: LiveDecision) -> None:
    """One sampling/queueing decision for one scorer on one piece of live traffic."""
    for observer in _observers:
        try:
            observer.decision(scorer_id, decision)
        except Exception:
            logger.exception("live observer %r failed; ignored", observer)


def record_in_flight(delta: int) -> None:
    """+1 when a live evaluation starts running, -1 when it ends (success or failure)."""
    for observer in _observers:
        try:
            observer.in_flight(delta)
        except Exception:
            logger.exception("live observer %r failed; ignored", observer)


def record_sink_error(sink: str) -> None:
    """A sink (by its low-cardinality name, e.g. `sqlite`) failed to write a result."""
    for observer in _observers:
        try:
            observer.sink_error(sink)
        except Exception:
            logger.exception("live observer %r failed; ignored", observer)


def record_closed(timeout: float | None) -> None:
    """A `LiveScoring` has closed (its runs stored, its sinks closed) and the process may be about
    to exit: observers holding buffered telemetry flush it now, within `timeout` seconds. Blocks;
    called off the event loop."""
    for observer in _observers:
        closed = getattr(observer, "closed", None)
        if closed is None:
            continue
        try:
            closed(timeout)
        except Exception:
            logger.exception("live observer %r failed; ignored", observer)


def register_queue_depth(source: Callable[[], int]) -> Callable[[], None]:
    """Make `source()` count in the live queue depth; returns the function that unregisters it."""
    return _depth_sources.register(source)


def total_queue_depth() -> int:
    return sum(_depth_sources.read())
