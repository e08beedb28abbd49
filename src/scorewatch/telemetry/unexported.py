"""`ExportAwareTracerProvider`: the tracer provider `configure` builds, which records spans only
while something receives them.

An SDK `TracerProvider` records every sampled span (attributes cleaned twice, a readable copy
made at its end) even when it has no span processor: `scorewatch serve` without a trace
exporter paid for three such spans per scored run that nobody ever received. This provider's
tracers, while it has no span processor, make what the SDK's sampler decides but record
nothing: each span still has its own trace and span ids and the sampler's flags, so what
depends on them keeps working (a run's `score_trace_id`, the exemplars of `/metrics`, which
the SDK takes from the sampled span current when a measurement is made, links and propagated
context), while its attributes, events, status and end are dropped. Once a span processor is
added (by `configure` for an exporter, or later by the application through
`handle.tracer_provider.add_span_processor`), every span started from then on is recorded by
the SDK as usual.

Providers an application brought are never wrapped: only the one `configure` builds.

`ExportAwareLoggerProvider` is the same for the evaluation events: an SDK `LoggerProvider` that
knows whether a log record processor was ever added, so that `events_unreceived(provider)` tells a
run's listener, for an attribute read, what `Logger.enabled` would answer after three calls and a
generator (False: with no processor, no record is taken whatever its context or severity).

`ids_only(tracer)` tells a run's listener that its spans are ids only (no span processor, and
the SDK's default sampler, whose decision follows the parent's): the listener then starts the
run's span, whose ids are the result's `score_trace_id` and the metrics' exemplars, and none of
its steps' (each would be one more span id in the same trace, sampled as its parent, received
by nobody), and builds no span attributes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from random import getrandbits
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.trace.sampling import DEFAULT_ON, Decision
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    TraceFlags,
    Tracer,
)

# The API's own decorator for start_as_current_span (usable on coroutine functions too).
from opentelemetry.util._decorator import _agnosticcontextmanager
from opentelemetry.util.types import Attributes

__all__ = [
    "ExportAwareLoggerProvider",
    "ExportAwareTracerProvider",
    "events_unreceived",
    "ids_only",
    "new_root_ids",
]


# The four flag sets a span here can have, made once: (sampled, random trace id) -> flags.
_FLAGS = {
    (sampled, random_id): TraceFlags(
        (TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
        | (TraceFlags.RANDOM_TRACE_ID if random_id else TraceFlags.DEFAULT)
    )
    for sampled in (False, True)
    for random_id in (False, True)
}
_TRACE_ID_MASK = (1 << 128) - 1


def new_root_ids(ids: IdGenerator) -> tuple[int, int]:
    """A new trace id and span id from `ids`, as `generate_trace_id()` then
    `generate_span_id()` would make them.

    The SDK's `RandomIdGenerator` draws `getrandbits(128)`, then `getrandbits(64)`, from
    `random`'s shared generator; `getrandbits(192)` draws the same 32-bit words in the same
    order, least significant first, so its low 128 bits and high 64 bits are those two ids,
    for one call instead of two. (A zero id, which the SDK draws again, is drawn again by the
    generator itself.) Any other generator is asked as the SDK asks it.
    """
    if type(ids) is RandomIdGenerator:
        bits = getrandbits(192)
        trace_id, span_id = bits & _TRACE_ID_MASK, bits >> 128
        if trace_id and span_id:
            return trace_id, span_id
    return ids.generate_trace_id(), ids.generate_span_id()


class ExportAwareTracerProvider(SdkTracerProvider):
    """An SDK tracer provider whose spans are recorded only once it has a span processor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exporting: bool = kwargs.get("active_span_processor") is not None
        """True once a span processor receives this provider's spans."""

    @property
    def ids_only(self) -> bool:
        """Its spans are ids and the default sampler's decision only (`ids_only`)."""
        return not self.exporting and self.sampler is DEFAULT_ON

    def add_span_processor(self, span_processor: Any) -> None:
        super().add_span_processor(span_processor)
        self.exporting = True

    def get_tracer(self, *args: Any, **kwargs: Any) -> Tracer:
        tracer = super().get_tracer(*args, **kwargs)
        # A disabled SDK (OTEL_SDK_DISABLED) hands out a no-op tracer: kept as it is.
        return _ExportAwareTracer(tracer, self) if isinstance(tracer, SdkTracer) else tracer


class ExportAwareLoggerProvider(SdkLoggerProvider):
    """An SDK logger provider that knows whether a log record processor was ever added."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A processor handed to the constructor counts as one added (the SDK's own
        # multi-processor, when none is given, starts empty).
        self.receiving: bool = kwargs.get("multi_log_record_processor") is not None
        """True once a log record processor was added (never False again: the SDK offers no
        way to remove one)."""

    def add_log_record_processor(self, log_record_processor: Any) -> None:
        super().add_log_record_processor(log_record_processor)
        self.receiving = True


def events_unreceived(logger_provider: object) -> bool:
    """Whether no logger of `logger_provider` takes a record now: it is a provider `configure`
    built and no processor was added to it, so the SDK's `Logger.enabled` is False for every
    context, severity and event name. Any other provider (None: the global one) is asked."""
    return type(logger_provider) is ExportAwareLoggerProvider and not logger_provider.receiving


def ids_only(tracer: Tracer) -> bool:
    """Whether the spans `tracer` starts now are ids only: it is the tracer of a provider
    `configure` built, which has no span processor and samples with the SDK's default sampler.
    A tracer of any other provider is never ids only."""
    return type(tracer) is _ExportAwareTracer and tracer._provider.ids_only


class _ExportAwareTracer(Tracer):
    """The SDK's tracer while its provider exports; ids and sampling flags only until then."""

    __slots__ = ("_provider", "_tracer")

    def __init__(self, tracer: SdkTracer, provider: ExportAwareTracerProvider) -> None:
        self._tracer = tracer
        self._provider = provider

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        provider = self._provider
        if provider.exporting:
            return self._tracer.start_span(
                name,
                context,
                kind,
                attributes,
                links,
                start_time,
                record_exception,
                set_status_on_exception,
            )
        # What the SDK's start_span decides, without the span it would record. Each property
        # of the parent's context read once: a scored run starts one such span.
        ids = provider.id_generator
        sampler = provider.sampler
        parent = trace.get_current_span(context).get_span_context()
        if parent.is_valid:
            trace_id, parent_flags = parent.trace_id, parent.trace_flags
            random_id = parent_flags.random_trace_id
            span_id = ids.generate_span_id()
            if sampler is DEFAULT_ON:
                # The SDK's default sampler, decided here as it decides: the parent's flag
                # and trace state.
                sampled, state = parent_flags.sampled, parent.trace_state
        else:
            trace_id, span_id = new_root_ids(ids)
            # The SDK's `RandomIdGenerator` answers True, asked or not.
            random_id = type(ids) is RandomIdGenerator or bool(ids.is_trace_id_random())
            if sampler is DEFAULT_ON:
                sampled, state = True, None  # a root span, which the default sampler samples
        if sampler is not DEFAULT_ON:
            decision = sampler.should_sample(context, trace_id, name, kind, attributes, links)
            sampled = decision.decision is Decision.RECORD_AND_SAMPLE
            state = decision.trace_state
        # By position: the API's `__new__` reads keyword arguments markedly slower. (trace id,
        # span id, is_remote, trace flags, trace state.)
        return NonRecordingSpan(
            SpanContext(trace_id, span_id, False, _FLAGS[sampled, random_id], state)
        )

    @_agnosticcontextmanager
    def start_as_current_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[Span]:
        span = self.start_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
        )
        with trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current
