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
from .listener import Attributes, RunTelemetry

__all__ = ["ScorerProfile", "TelemetryObserver"]

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
        return RunTelemetry(self, start)

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


class ScorerProfile:
    """Span names and attribute dicts of one scorer's runs, shared by all of them.

    The dicts are never mutated after construction: the SDK copies span attributes, and a
    metric measurement only reads its attributes.
    """

    __slots__ = (
        "by_outcome",
        "direction",
        "models",
        "run_attributes",
        "run_span_name",
        "scale",
        "score_attributes",
        "scorer",
        "step_metric_attributes",
        "step_span",
        "threshold",
    )

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        scorer_id: str = scorer.id
        self.scale = float(getattr(scorer, "scale", 1.0) or 1.0)
        self.threshold = getattr(scorer, "threshold", None)
        self.direction = getattr(scorer, "direction", "higher_is_better")
        self.models = _step_models(scorer)
        self.run_span_name = names.run_span_name(scorer_id)
        base: Attributes = {
            names.ATTR_OPERATION_NAME: names.OPERATION_EVALUATION,
            names.ATTR_EVALUATION_NAME: scorer_id,
            names.ATTR_SCORER_ID: scorer_id,
        }
        scorer_name = getattr(scorer, "name", None)
        if scorer_name:
            base[names.ATTR_SCORER_NAME] = str(scorer_name)
        self.run_attributes = base
        self.step_span: dict[tuple[str, str], tuple[str, Attributes]] = {}
        self.step_metric_attributes: dict[tuple[str, str], Attributes] = {}
        self.score_attributes: dict[tuple[str, str | None], Attributes] = {}
        self.by_outcome: dict[str, Attributes] = {}
        for step in getattr(scorer, "steps", ()):
            name, kind = str(getattr(step, "name", "")), str(getattr(step, "type", ""))
            self.step_span[(name, kind)] = (
                names.step_span_name(name),
                {names.ATTR_STEP: name, names.ATTR_STEP_TYPE: kind},
            )
            self.step_metric_attributes[(name, kind)] = {
                names.ATTR_EVALUATION_NAME: scorer_id,
                names.ATTR_STEP: name,
                names.ATTR_STEP_TYPE: kind,
            }

    def outcome_attributes(self, outcome: str) -> Attributes:
        attributes = self.by_outcome.get(outcome)
        if attributes is None:
            attributes = self.by_outcome[outcome] = {
                names.ATTR_EVALUATION_NAME: self.scorer.id,
                names.ATTR_OUTCOME: outcome,
            }
        return attributes


def _step_models(scorer: Any) -> dict[str, tuple[str, str | None]]:
    """(litellm route, provider) of each prompt step's judge, when the scorer exposes it, to name
    `chat` spans before the call."""
    models: dict[str, tuple[str, str | None]] = {}
    for step in getattr(scorer, "steps", ()):
        model = getattr(getattr(step, "judge", None), "model", None)
        model_id = getattr(model, "model_id", None)
        provider = getattr(model, "provider", None)
        if isinstance(model_id, str):
            models[str(getattr(step, "name", ""))] = (
                model_id,
                provider if isinstance(provider, str) else None,
            )
    return models
