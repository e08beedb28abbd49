"""What telemetry hears on an event bus (`core.events.Observers`): `TelemetryObserver`, the
subscriber `instrument()` adds, and `RunTelemetry`, the listener it hands each run for that run's
spans, metrics and evaluation event.

The producers' events it subscribes to (`handlers`: live decisions and runs in flight, failed
sink writes, the Redis stream's redeliveries and dead letters, each defined by its producer)
become counters directly; the gauges (live queue depth, stream readings) are pulled from the bus
by the instruments when they are collected. What every run of one scorer shares (names,
attribute dicts) is computed once, in its `ScorerProfile`.

A run's telemetry is derived from what the core reports (`core.events.RunListener`):
spans follow the calls as they happen; the judge counters come from each step's judge record, and
token usage from each attempt (whose usages sum to the record by the events' contract), so the
exported figures add up to the judge records exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import Logger, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.metrics import Histogram
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    TraceFlags,
    Tracer,
)

from ..core.events import (
    Handler,
    JudgeAttempt,
    JudgeCacheLookup,
    Observer,
    RunListener,
    RunStart,
    StepOutcome,
)
from ..core.result import ScorerRunResult
from ..core.steps import StepName, StepType
from ..judge.protocol import JudgeRequest
from ..live.events import DeadLettered, Decided, InFlight, Redelivered
from ..privacy import CURRENT_REDACTION
from ..sinks.delivery import SinkFailed
from ..sinks.record import kept_value
from . import describe, judge_calls, names
from .bound import BoundHistogram
from .cardinality import CardinalityGuard
from .content import ContentCapture
from .describe import Attributes
from .flush import flush_providers
from .instruments import Instruments
from .unexported import events_unreceived, ids_only

__all__ = ["RunTelemetry", "ScorerProfile", "TelemetryObserver"]

logger = logging.getLogger("scorewatch.telemetry")


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
    # What `instrument()` was given (tracer, meter, logger provider; None: the global one):
    # what `flush` flushes, and where `tracer` makes its spans.
    providers: tuple[Any, Any, Any] = (None, None, None)
    profiles: dict[int, ScorerProfile] = field(default_factory=dict)
    # Scorer versions on metrics: a process that builds scorers on the fly cannot grow series
    # without end (the spans and events keep the real version).
    version_guard: CardinalityGuard = field(default_factory=CardinalityGuard)

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
        profile = ScorerProfile(scorer, self.instruments, self.version_guard)
        self.instruments.scorer_version_seen(profile.info_attributes)
        if len(self.profiles) >= _PROFILE_CACHE_SIZE:
            self.profiles.clear()
        self.profiles[id(scorer)] = profile
        return profile

    # -- the producers' events ----------------------------------------------------------------

    def handlers(self) -> dict[type, Handler]:
        queue = self.instruments.queue
        return {
            Decided: self.decided,
            InFlight: self.in_flight,
            SinkFailed: self.sink_failed,
            Redelivered: queue.redelivered,
            DeadLettered: queue.dead_lettered,
        }

    def decided(self, event: Decided) -> None:
        # Tallied, so a decision costs no call into the SDK.
        self.instruments.decisions.add((event.scorer_id, event.decision))

    def in_flight(self, event: InFlight) -> None:
        self.instruments.live_in_flight.add((), event.delta)

    def sink_failed(self, event: SinkFailed) -> None:
        self.instruments.sink_errors.add(1, {names.ATTR_SINK: event.sink})

    def flush(self, timeout: float | None) -> None:
        """Live scoring closed, perhaps just before the process exits: flush the providers
        this observer was given."""
        flush_providers(*self.providers, timeout)


class ScorerProfile:
    """Span names, attribute dicts and histogram series of one scorer's runs, shared by all of
    them.

    The dicts are never mutated after construction: the SDK copies span attributes, and a
    metric measurement only reads its attributes. The histograms' series are bound to their
    attributes (`bound.py`), so a run's measurements skip the SDK's per-call lookups.
    """

    __slots__ = (
        "attempt_series",
        "by_outcome",
        "declared_version",
        "direction",
        "info_attributes",
        "instruments",
        "metric_version",
        "models",
        "run_attributes",
        "run_span_name",
        "scale",
        "score_histogram",
        "score_series",
        "scorer",
        "scorer_id",
        "step_durations",
        "step_span",
        "threshold",
        "version",
    )

    def __init__(
        self,
        scorer: Any,
        instruments: Instruments,
        version_guard: CardinalityGuard | None = None,
    ) -> None:
        self.scorer = scorer
        self.instruments = instruments
        scorer_id: str = scorer.id
        self.scorer_id = scorer_id
        # Duck-typed as the rest: an object with only an id still gets telemetry.
        version = getattr(scorer, "version_fingerprint", None)
        self.version: str | None = version if isinstance(version, str) else None
        declared = getattr(scorer, "declared_version", None)
        self.declared_version: str | None = declared if isinstance(declared, str) else None
        self.metric_version: str | None = (
            None
            if self.version is None
            else version_guard(self.version)
            if version_guard is not None
            else self.version
        )
        self.info_attributes: dict[str, str] = {
            names.ATTR_EVALUATION_NAME: scorer_id,
            names.ATTR_SCORER_VERSION: self.metric_version or "",
        }
        if self.declared_version is not None and self.metric_version == self.version:
            self.info_attributes[names.ATTR_SCORER_DECLARED_VERSION] = self.declared_version
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
        if self.version is not None:
            base[names.ATTR_SCORER_VERSION] = self.version
        if self.declared_version is not None:
            base[names.ATTR_SCORER_DECLARED_VERSION] = self.declared_version
        self.run_attributes = base
        self.step_span: dict[tuple[str, str], tuple[str, Attributes]] = {}
        self.step_durations: dict[tuple[str, str], BoundHistogram] = {}
        # Judge attempts' histogram series (`judge_calls.record_attempt`).
        self.attempt_series: dict[Hashable, judge_calls.AttemptSeries] = {}
        # Keyed by (score source, target as the run gave it); a target the cardinality guard
        # turned into `_other` is looked up under `_other`, so at most `limit` targets are kept.
        # Each a series of the score histogram, with its key in the squared-score tally.
        self.score_series: dict[tuple[str, str | None], tuple[BoundHistogram, Hashable]] = {}
        # The histogram of this scorer's scale, once the first score was recorded.
        self.score_histogram: Histogram | None = None
        # Each a series of the run duration, with its key in the runs tally (its items).
        self.by_outcome: dict[str, tuple[BoundHistogram, Hashable]] = {}
        for step in getattr(scorer, "steps", ()):
            name, kind = str(getattr(step, "name", "")), str(getattr(step, "type", ""))
            self.step_span[(name, kind)] = (
                names.step_span_name(name),
                {names.ATTR_STEP: name, names.ATTR_STEP_TYPE: kind},
            )
            self.step_durations[(name, kind)] = BoundHistogram(
                instruments.step_duration,
                {
                    names.ATTR_EVALUATION_NAME: scorer_id,
                    names.ATTR_STEP: name,
                    names.ATTR_STEP_TYPE: kind,
                },
            )

    def outcome_series(self, outcome: str) -> tuple[BoundHistogram, Hashable]:
        """The run duration's series of a run's outcome, and its key in the runs tally."""
        known = self.by_outcome.get(outcome)
        if known is None:
            attributes: Attributes = {
                names.ATTR_EVALUATION_NAME: self.scorer_id,
                names.ATTR_OUTCOME: outcome,
            }
            known = self.by_outcome[outcome] = (
                BoundHistogram(self.instruments.run_duration, attributes),
                tuple(attributes.items()),
            )
        return known


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


def _parse_hex(value: str | None, width: int) -> int:
    if not value:
        return 0
    try:
        number = int(value, 16)
    except ValueError:
        return 0
    return number if len(value) <= width else 0


def _target_context(trace_id: str | None, span_id: str | None) -> SpanContext | None:
    parsed_trace, parsed_span = _parse_hex(trace_id, 32), _parse_hex(span_id, 16)
    if not parsed_trace or not parsed_span:
        return None
    # By position (trace id, span id, is_remote, trace flags): the API's `__new__` reads
    # keyword arguments markedly slower, and a trace's every scored run makes one.
    return SpanContext(parsed_trace, parsed_span, True, _SAMPLED)


_SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)


@dataclass(slots=True)
class _OpenSpan:
    """An open step or judge attempt: its span and the context token to detach."""

    span: Span
    token: object
    model: str | None = None
    # A step's: its name, and the series of its duration, looked up when it started.
    step: str | None = None
    duration: BoundHistogram | None = None


class RunTelemetry(RunListener):
    """The listener of one run. Its `trace_id` becomes `score_trace_id`."""

    __slots__ = (
        "_attempts",
        "_capture",
        "_emit_score",
        "_evaluated",
        "_evaluated_response_id",
        "_instruments",
        "_observer",
        "_profile",
        "_providers",
        "_quiet",
        "_redact",
        "_redaction",
        "_run_context",
        "_run_id",
        "_run_span",
        "_run_token",
        "_score_source",
        "_steps",
        "_target",
        "trace_id",
    )

    def __init__(
        self, observer: TelemetryObserver, start: RunStart, profile: ScorerProfile
    ) -> None:
        self._observer = observer
        self._instruments = observer.instruments
        self._capture = observer.capture
        # The run's redactor (a privacy policy's), shared with its row: content this exports
        # carries the same markers.
        self._redaction = redaction = CURRENT_REDACTION.get()  # read directly: no call
        self._redact = None if redaction is None else redaction.text
        # What every run of the scorer shares (its id, scale, models...) is read from its
        # profile when needed, not copied into each run's listener.
        run = start.run
        self._profile = profile
        self._emit_score = start.emit_score
        self._score_source = run.score_source or "direct"
        self._target = run.target
        self._run_id = run.run_id
        self._steps: list[_OpenSpan] = []
        self._attempts: list[_OpenSpan] = []
        # The evaluated completion's id (never the judge's own): the event's `gen_ai.response.id`.
        self._evaluated_response_id = (
            describe.evaluated_response_id(run.target_metadata) if run.target_metadata else None
        )
        # Judge routes' providers as the attempts reported them; made by the first attempt.
        self._providers: dict[str, str | None] | None = None
        self._evaluated = (
            _target_context(run.target_trace_id, run.target_span_id)
            if run.target_trace_id or run.target_span_id
            else None
        )

        tracer = observer.tracer
        # Spans that are ids only (`unexported.ids_only`), for the whole run: its span carries
        # no attributes (nobody receives them) and its steps start none.
        self._quiet = quiet = ids_only(tracer)
        attributes: Attributes | None = None
        if not quiet:
            attributes = profile.run_attributes.copy()
            attributes[names.ATTR_SCORE_SOURCE] = self._score_source
            if run.run_id:
                attributes[names.ATTR_RUN_ID] = run.run_id
            if run.target:
                attributes[names.ATTR_TARGET] = run.target
            if self._capture.on_spans:
                attributes[names.ATTR_RUN_INPUT] = self._content(run.input)
                attributes[names.ATTR_RUN_OUTPUT] = self._content(run.output)

        # Live traffic is scored after the fact: the run starts its own trace and links to the
        # evaluated span, so the agent's trace never waits on (or contains) the judge.
        parent: Context | None = None
        links: list[Link] | tuple[()] = ()
        if quiet:
            # An ids-only span keeps no links (`unexported`): the evaluated span only makes
            # the run a trace of its own.
            if self._evaluated is not None:
                parent = Context()
        elif self._evaluated is not None or start.links:
            links = []
            if self._evaluated is not None:
                parent = Context()
                links.append(Link(self._evaluated))
            # A run scored by a queue worker also links to the request that enqueued it.
            for link in start.links:
                enqueued = _target_context(link.trace_id, link.span_id)
                if enqueued is not None:
                    links.append(Link(enqueued))
        # By position (name, context, kind, attributes, links: the API's order), every run.
        span = tracer.start_span(
            profile.run_span_name, parent, SpanKind.INTERNAL, attributes, links
        )
        self._run_span = span
        self._run_context = trace.set_span_in_context(span)
        self._run_token: object | None = otel_context.attach(self._run_context)
        span_context = span.get_span_context()
        self.trace_id: str | None = (
            format(span_context.trace_id, "032x") if span_context.is_valid else None
        )

    def _content(self, value: Any) -> str:
        """`value` as a content attribute: JSON text, redacted under a privacy policy. A value
        that is not text is written as JSON after its texts are redacted, as the run's row
        keeps them: redacting the JSON text would read its escapes (`\n` before a value)."""
        if self._redaction is None:
            return describe.to_json(value)
        if isinstance(value, str):
            return self._redaction.text(value)
        return describe.to_json(kept_value(value, self._redaction))

    # -- context bookkeeping -----------------------------------------------------------------

    @staticmethod
    def _detach(token: object | None) -> None:
        if token is None:
            return
        try:
            otel_context.detach(token)  # type: ignore[arg-type]
        except Exception:
            logger.debug("context detach out of order; ignored", exc_info=True)

    def _close_attempts(self, error: BaseException | None = None) -> None:
        # Attempts the core never reported finished (e.g. cancelled) end here, innermost first.
        while self._attempts:
            open_attempt = self._attempts.pop()
            self._detach(open_attempt.token)
            if error is not None:
                describe.mark_failed(open_attempt.span, error, self._capture.on_spans, self._redact)
            open_attempt.span.end()

    def _close_steps(self, error: BaseException | None = None) -> None:
        self._close_attempts(error)
        while self._steps:
            open_step = self._steps.pop()
            self._detach(open_step.token)
            if error is not None:
                describe.mark_failed(open_step.span, error, self._capture.on_spans, self._redact)
            open_step.span.end()

    # -- steps -------------------------------------------------------------------------------

    def step_started(self, step: StepName, step_type: StepType) -> None:
        if self._quiet:
            # The run's span stands for the step's (a judge call's span is its child): the
            # step has no span and attaches no context, so nothing of it is kept open; its
            # duration's series is found from its outcome (`step_finished`).
            if self._attempts:
                self._close_attempts()
            return
        if self._steps or self._attempts:
            self._close_steps()
        profile, key = self._profile, (step, step_type)
        known = profile.step_span.get(key)
        span_name, attributes = known or (
            names.step_span_name(step),
            {names.ATTR_STEP: step, names.ATTR_STEP_TYPE: step_type},
        )
        span = self._observer.tracer.start_span(
            span_name,
            context=self._run_context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        self._steps.append(_OpenSpan(span, token, None, step, profile.step_durations.get(key)))

    def step_finished(self, outcome: StepOutcome) -> None:
        if self._attempts:
            self._close_attempts()
        duration = None
        if self._quiet:
            # Keyed as the series of a step that started: the same attribute set.
            duration = self._profile.step_durations.get((outcome.step, outcome.step_type))
        elif self._steps:
            open_step = self._steps.pop()
            self._detach(open_step.token)
            if outcome.error is not None:
                describe.mark_failed(
                    open_step.span, outcome.error, self._capture.on_spans, self._redact
                )
            open_step.span.end()
            if open_step.step == outcome.step:
                duration = open_step.duration
            if self._steps:
                self._close_steps()

        ins = self._instruments
        if duration is not None:
            duration.record(outcome.duration_s)
        else:
            step_attributes: Attributes = {
                names.ATTR_EVALUATION_NAME: self._profile.scorer_id,
                names.ATTR_STEP: outcome.step,
                names.ATTR_STEP_TYPE: outcome.step_type,
            }
            ins.step_duration.record(outcome.duration_s, step_attributes)
        execution = outcome.execution
        if execution is not None:
            counted: Attributes = {
                names.ATTR_EVALUATION_NAME: self._profile.scorer_id,
                names.ATTR_STEP: outcome.step,
                names.ATTR_REQUEST_MODEL: self._observer.model_guard(
                    self._request_model(outcome.step, execution.judge_model_id)
                ),
                names.ATTR_STATUS: execution.status,
            }
            ins.judge_executions.add(1, counted)
            ins.judge_attempts.add(execution.attempt_count, counted)

    def _request_model(self, step: StepName, route: str) -> str:
        """The provider-visible name of a judge model known by its litellm route."""
        providers = self._providers
        if providers is not None and route in providers:
            return describe.provider_model(route, providers[route])
        known_route, provider = self._profile.models.get(step) or (None, None)
        return describe.provider_model(route, provider if known_route == route else None)

    # -- judge attempts ----------------------------------------------------------------------

    def judge_attempt_started(self, step: StepName, request: JudgeRequest) -> None:
        self._close_attempts()
        # An ids-only run's steps have no span: the run's is the parent.
        parent = self._steps[-1].span if self._steps and not self._quiet else self._run_span
        span, token, model = judge_calls.open_chat_span(
            self._observer.tracer,
            parent,
            step,
            request,
            self._profile.models.get(step),
            self._capture.on_spans,
            self._redact,
        )
        self._attempts.append(_OpenSpan(span, token, model))

    def judge_attempt_finished(self, attempt: JudgeAttempt) -> None:
        open_attempt = self._attempts.pop() if self._attempts else None
        if open_attempt is not None:
            self._detach(open_attempt.token)
            judge_calls.finish_chat_span(
                open_attempt.span,
                open_attempt.model,
                attempt,
                self._capture.on_spans,
                self._redact,
            )
        if self._providers is None:
            self._providers = {}
        self._providers[attempt.model_id] = attempt.provider
        judge_calls.record_attempt(
            self._instruments,
            self._observer.model_guard,
            self._profile.scorer_id,
            attempt,
            self._profile.attempt_series,
        )

    def judge_cache_lookup(self, lookup: JudgeCacheLookup) -> None:
        route = describe.provider_model(lookup.model_id, lookup.provider)
        model = self._observer.model_guard(route)
        attributes: Attributes = {
            names.ATTR_EVALUATION_NAME: self._profile.scorer_id,
            names.ATTR_STEP: lookup.step,
            names.ATTR_REQUEST_MODEL: model,
        }
        result = names.CACHE_HIT if lookup.hit else names.CACHE_MISS
        self._instruments.judge_cache_lookups.add(
            1, {**attributes, names.ATTR_CACHE_RESULT: result}
        )
        if lookup.hit and lookup.saved_cost_usd:
            self._instruments.judge_cache_saved.add(lookup.saved_cost_usd, attributes)

    # -- run end -----------------------------------------------------------------------------

    def run_finished(self, result: ScorerRunResult, duration_s: float) -> None:
        if self._steps or self._attempts:
            self._close_steps()
        score = getattr(result, "score", None)
        not_scorable = bool(getattr(result, "not_scorable", None)) or score is None
        outcome = names.OUTCOME_NOT_SCORABLE if not_scorable else names.OUTCOME_SUCCESS
        span = self._run_span
        if score is not None and not not_scorable and not self._quiet:
            span.set_attribute(names.ATTR_SCORE, float(score))
        if self._capture.on_spans and result.reason is not None and not self._quiet:
            span.set_attribute(names.ATTR_REASON, self._content(result.reason))
        ins = self._instruments
        run_duration, runs_key = self._profile.outcome_series(outcome)
        ins.scorer_runs.add(runs_key)
        run_duration.record(duration_s)
        if score is not None and not not_scorable:
            scores, squares_key = self._score_series()
            scores.record(float(score))
            ins.score_squares.add(squares_key, float(score) ** 2)
        # Asked here too, before the call and its keywords: every run of serve's asks it.
        if self._emit_score and not events_unreceived(self._observer.providers[2]):
            reason = result.reason if self._capture.on_events else None
            self._emit_event(score=None if not_scorable else score, reason=reason, error=None)
        self._end_run()

    def _score_series(self) -> tuple[BoundHistogram, Hashable]:
        # A target the guard admitted keeps its series forever, so a cached entry stands for
        # the guard's answer; only a target it has not seen (or refused) asks the guard.
        profile, source = self._profile, self._score_source
        cached = profile.score_series.get((source, self._target or None))
        if cached is not None:
            return cached
        target = self._observer.target_guard(self._target) if self._target else None
        key = (source, target)
        known = profile.score_series.get(key)
        if known is None:
            attributes: Attributes = {
                names.ATTR_EVALUATION_NAME: profile.scorer_id,
                names.ATTR_SCORE_SOURCE: source,
            }
            if profile.metric_version is not None:
                attributes[names.ATTR_SCORER_VERSION] = profile.metric_version
            if target is not None:
                attributes[names.ATTR_TARGET] = target
            histogram = profile.score_histogram
            if histogram is None:
                histogram = profile.score_histogram = self._instruments.score_histogram(
                    profile.scale
                )
            known = profile.score_series[key] = (
                BoundHistogram(histogram, attributes),
                tuple(attributes.items()),
            )
        return known

    def run_failed(self, error: BaseException, duration_s: float) -> None:
        if not isinstance(error, Exception):
            # Cancelled or interrupted: the run did not finish, so it is neither a score nor a
            # failure to count; its spans end marked with the interruption, and nothing else.
            self._close_steps(error)
            describe.mark_failed(self._run_span, error, self._capture.on_spans, self._redact)
            self._end_run()
            return
        self._close_steps()
        failed_step = getattr(error, "failed_step", None)
        span = self._run_span
        if failed_step:
            span.set_attribute(names.ATTR_FAILED_STEP, str(failed_step))
        describe.mark_failed(span, error, self._capture.on_spans, self._redact)
        run_attributes: Attributes = {
            names.ATTR_EVALUATION_NAME: self._profile.scorer_id,
            names.ATTR_OUTCOME: names.OUTCOME_FAILED,
        }
        ins = self._instruments
        ins.run_duration.record(duration_s, run_attributes)
        if failed_step:
            run_attributes[names.ATTR_FAILED_STEP] = str(failed_step)
        ins.scorer_runs.add(tuple(run_attributes.items()))
        if self._emit_score:
            self._emit_event(score=None, reason=None, error=error)
        self._end_run()

    def _end_run(self) -> None:
        token, self._run_token = self._run_token, None
        self._detach(token)
        if not self._quiet:  # an ids-only span's end is a no-op
            self._run_span.end()

    def _emit_event(self, score: float | None, reason: Any, error: BaseException | None) -> None:
        observer = self._observer
        # With no log record processor on a provider `configure` built, the SDK's `enabled`
        # below is False whatever it is asked: not asked (three calls and a generator a run).
        if events_unreceived(observer.providers[2]):
            return
        severity = SeverityNumber.WARN if error is not None else SeverityNumber.INFO
        parent = (
            trace.set_span_in_context(NonRecordingSpan(self._evaluated))
            if self._evaluated is not None
            else self._run_context
        )
        event_logger = observer.event_logger
        # As the logs API asks: no record is built that no processor would take (an SDK
        # LoggerProvider without one, serve with no log exporter).
        if not event_logger.enabled(
            context=parent, severity_number=severity, event_name=names.EVENT_EVALUATION_RESULT
        ):
            return
        profile = self._profile
        attributes: Attributes = {names.ATTR_EVALUATION_NAME: profile.scorer_id}
        if profile.version is not None:
            attributes[names.ATTR_SCORER_VERSION] = profile.version
        if profile.declared_version is not None:
            attributes[names.ATTR_SCORER_DECLARED_VERSION] = profile.declared_version
        if score is not None:
            attributes[names.ATTR_EVALUATION_SCORE_VALUE] = float(score)
            label = self._label(float(score))
            if label is not None:
                attributes[names.ATTR_EVALUATION_SCORE_LABEL] = label
        if reason is not None:
            attributes[names.ATTR_EVALUATION_EXPLANATION] = self._content(reason)
        if self._evaluated_response_id:
            attributes[names.ATTR_RESPONSE_ID] = self._evaluated_response_id
        if self._run_id:
            attributes[names.ATTR_RUN_ID] = self._run_id
        if error is not None:
            attributes[names.ATTR_ERROR_TYPE] = describe.error_type(error)
        event_logger.emit(
            event_name=names.EVENT_EVALUATION_RESULT,
            context=parent,
            severity_number=severity,
            severity_text="WARN" if error is not None else "INFO",
            attributes=attributes,
        )

    def _label(self, score: float) -> str | None:
        threshold = self._profile.threshold
        if not isinstance(threshold, int | float) or isinstance(threshold, bool):
            return None
        lower_is_better = self._profile.direction == "lower_is_better"
        passed = score <= threshold if lower_is_better else score >= threshold
        return "pass" if passed else "fail"
