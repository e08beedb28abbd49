"""`TelemetryObserver`: what `instrument()` subscribes to an event bus (`core.events.Observers`).

At each run start it hands the run a `RunTelemetry` (spans, metrics and the evaluation event of
that run, in `listener.py`); the live and queue events (decisions, in-flight runs, sink errors,
redeliveries, dead letters) become counters directly. The gauges (live queue depth, work-queue
readings) are pulled from the bus by the instruments when they are collected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry._logs import Logger
from opentelemetry.trace import Tracer

from ..core.events import LiveDecision, Observer, RunStart
from . import names
from .cardinality import CardinalityGuard
from .content import ContentCapture
from .instruments import Instruments
from .listener import RunTelemetry, ScorerProfile

__all__ = ["TelemetryObserver"]

_PROFILE_CACHE_SIZE = 1024


@dataclass(slots=True)
class TelemetryObserver(Observer):
    """Turns the events of one bus into OpenTelemetry spans, metrics and events."""

    tracer: Tracer
    event_logger: Logger
    instruments: Instruments
    capture: ContentCapture
    target_guard: CardinalityGuard
    model_guard: CardinalityGuard
    profiles: dict[int, ScorerProfile] = field(default_factory=dict)

    def run_started(self, start: RunStart) -> RunTelemetry:
        return RunTelemetry(self, start, self.profile(start.scorer))

    def profile(self, scorer: Any) -> ScorerProfile:
        """What every run of `scorer` shares (names, attribute dicts), computed once.

        Keyed by identity and checked against the scorer object itself, so a new scorer that
        reuses a freed object's id never sees the old profile.
        """
        profile = self.profiles.get(id(scorer))
        if profile is not None and profile.scorer is scorer:
            return profile
        profile = ScorerProfile(scorer)
        if len(self.profiles) >= _PROFILE_CACHE_SIZE:
            self.profiles.clear()
        self.profiles[id(scorer)] = profile
        return profile

    # -- live scoring and the work queue -----------------------------------------------------

    def decision(self, scorer_id: str, decision: LiveDecision) -> None:
        self.instruments.live_decisions.add(
            1, {names.ATTR_EVALUATION_NAME: scorer_id, names.ATTR_DECISION: decision}
        )

    def in_flight(self, delta: int) -> None:
        self.instruments.live_in_flight.add(delta)

    def sink_error(self, sink: str) -> None:
        self.instruments.sink_errors.add(1, {names.ATTR_SINK: sink})

    def redelivered(self, stream: str, count: int) -> None:
        self.instruments.queue.redelivered(stream, count)

    def dead_lettered(self, stream: str, reason: str) -> None:
        self.instruments.queue.dead_lettered(stream, reason)
