"""Live-scoring metrics: the telemetry side of `scorewatch.live.observers`."""

from __future__ import annotations

from ..live.observers import LiveDecision
from . import names
from .flush import flush_providers
from .instruments import Instruments

__all__ = ["LiveMetrics"]


class LiveMetrics:
    """Implements `scorewatch.live.observers.LiveObserver` on the telemetry instruments.

    Registered by `instrument()`; also usable directly (`telemetry.live_metrics()`) by code that
    sits below telemetry in the import order, such as the server.
    """

    __slots__ = ("_instruments",)

    def __init__(self, instruments: Instruments) -> None:
        self._instruments = instruments

    def decision(self, scorer_id: str, decision: LiveDecision) -> None:
        self._instruments.live_decisions.add(
            1, {names.ATTR_EVALUATION_NAME: scorer_id, names.ATTR_DECISION: decision}
        )

    def in_flight(self, delta: int) -> None:
        self._instruments.live_in_flight.add(delta)

    def sink_error(self, sink: str) -> None:
        self._instruments.sink_errors.add(1, {names.ATTR_SINK: sink})

    def closed(self, timeout: float | None) -> None:
        """A `LiveScoring` closed, perhaps before the process exits: flush what is buffered."""
        flush_providers(timeout)
