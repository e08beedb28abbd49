"""`instrument`/`uninstrument` (observe scorer runs) and `configure` (the one-call SDK set-up).

What is subscribed lives on the event bus (`core.events.Observers`, default `OBSERVERS`): a bus
is instrumented when a `TelemetryObserver` is among its subscribers. The module keeps only what
is process-wide: the instruments of each MeterProvider and the providers `configure` built.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Tracer, TracerProvider
from prometheus_client import CollectorRegistry

from .._version import __version__
from ..core.events import OBSERVERS, Observers
from . import names
from .cardinality import CardinalityGuard
from .content import CaptureContent, resolve_capture
from .exporters import (
    ExportPlan,
    OtlpProtocol,
    export_plan,
    log_exporter,
    metric_exporter,
    span_exporter,
)
from .instruments import Instruments, metric_views
from .listener import TelemetryObserver
from .prometheus import (
    PrometheusServer,
    default_registry,
    prometheus_metric_reader,
    set_default_registry,
)
from .unexported import ExportAwareLoggerProvider, ExportAwareTracerProvider

__all__ = [
    "OtlpProtocol",
    "TelemetryHandle",
    "configure",
    "existing_providers",
    "instrument",
    "is_instrumented",
    "tracer_for",
    "uninstrument",
]

logger = logging.getLogger("scorewatch.telemetry")

P = TypeVar("P")


_lock = threading.RLock()
_instruments: weakref.WeakKeyDictionary[MeterProvider, Instruments] = weakref.WeakKeyDictionary()


def instrument(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    capture_content: CaptureContent = None,
    *,
    cardinality_limit: int = names.DEFAULT_CARDINALITY_LIMIT,
    observers: Observers = OBSERVERS,
) -> None:
    """Start deriving spans, metrics and evaluation events from every scorer run.

    Providers left None are the global ones (resolved lazily, so a global set later still
    counts). `observers` is the bus to listen to (default: the process's). Calling it again
    replaces the previous instrumentation of that bus.
    """
    provider = meter_provider or metrics.get_meter_provider()
    with _lock:
        # One set of instruments per MeterProvider: the SDK keeps the first registration of a
        # name (and its callbacks), so instruments made again would never report.
        instruments = _instruments.get(provider)
        if instruments is None:
            instruments = Instruments(provider)
            _instruments[provider] = instruments
    observer = TelemetryObserver(
        tracer=trace.get_tracer(
            names.INSTRUMENTATION_SCOPE, __version__, tracer_provider=tracer_provider
        ),
        event_logger=_logs.get_logger(
            names.INSTRUMENTATION_SCOPE, __version__, logger_provider=logger_provider
        ),
        instruments=instruments,
        capture=resolve_capture(capture_content),
        target_guard=CardinalityGuard(cardinality_limit),
        model_guard=CardinalityGuard(cardinality_limit),
        version_guard=CardinalityGuard(cardinality_limit),
        providers=(tracer_provider, meter_provider, logger_provider),
    )
    with _lock:
        uninstrument(observers)
        instruments.source = observers
        observers.add(observer)


def uninstrument(observers: Observers = OBSERVERS) -> None:
    """Stop observing the runs of `observers`. Instruments stay in their MeterProvider but
    receive nothing more."""
    with _lock:
        for subscribed in observers.subscribers:
            if isinstance(subscribed, TelemetryObserver):
                _withdraw(observers, subscribed)


def _withdraw(observers: Observers, observer: TelemetryObserver) -> None:
    with _lock:
        if not any(o is observer for o in observers.subscribers):
            return  # replaced meanwhile: the newer instrumentation keeps the instruments
        observers.remove(observer)
        if observer.instruments.source is observers:
            observer.instruments.source = None


def _subscribed(observers: Observers) -> TelemetryObserver | None:
    """The observer `instrument()` subscribed to `observers`, if any."""
    return next((o for o in observers.subscribers if isinstance(o, TelemetryObserver)), None)


def is_instrumented(observers: Observers = OBSERVERS) -> bool:
    return _subscribed(observers) is not None


def tracer_for(observers: Observers = OBSERVERS) -> Tracer:
    """The tracer `instrument()` gave `observers`, for the spans scorewatch makes beside its
    runs (the work queue's producer and consumer spans): they go to the tracer provider handed
    to `instrument()`, like the runs'. Without instrumentation, a no-op tracer (which keeps the
    current span current, so a request's trace context still propagates)."""
    observer = _subscribed(observers)
    return _NO_SPANS if observer is None else observer.tracer


_NO_SPANS: Tracer = trace.NoOpTracer()


# -- configure ---------------------------------------------------------------------------------


def _resource(service_name: str) -> Resource:
    # OTEL_SERVICE_NAME, when set, names the service; `service_name` is the fallback.
    if os.environ.get("OTEL_SERVICE_NAME"):
        return Resource.create()
    return Resource.create({"service.name": service_name})


class TelemetryHandle:
    """What `configure` set up or joined: providers, the Prometheus endpoint, the exporters.

    Providers the process already had (an application's or `opentelemetry-instrument`'s) are
    borrowed: `shutdown` flushes them and removes the Prometheus reader it added, but leaves
    them running for their owner.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        logger_provider: LoggerProvider,
        registry: CollectorRegistry | None,
        server: PrometheusServer | None,
        span_processors: list[BatchSpanProcessor],
        log_processors: list[BatchLogRecordProcessor],
        owned: tuple[bool, bool, bool],
        prometheus_reader: MetricReader | None,
        exporters: ExportPlan,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.logger_provider = logger_provider
        self.registry = registry
        self._server = server
        self._span_processors = span_processors
        self._log_processors = log_processors
        self._owned = owned
        self._prometheus_reader = prometheus_reader
        # The push exporters this handle built, per signal (none where a provider was borrowed).
        self.exporters = exporters
        # What `configure` subscribed; shutdown withdraws it unless it was replaced since.
        self._subscription: tuple[Observers, TelemetryObserver] | None = None
        self._closed = False

    @property
    def reused_providers(self) -> bool:
        """True when every provider was the process's own (nothing built a second pipeline)."""
        return not any(self._owned)

    @property
    def prometheus_port(self) -> int | None:
        return None if self._server is None else self._server.port

    @property
    def prometheus_url(self) -> str | None:
        return None if self._server is None else self._server.url

    def export_queue_lengths(self) -> dict[str, int]:
        """Spans and log records waiting for the exporters (bounded by the queue size)."""
        return {
            "spans": sum(_queue_length(p) for p in self._span_processors),
            "logs": sum(_queue_length(p) for p in self._log_processors),
        }

    def _providers(self) -> tuple[Any, Any, Any]:
        # In the order of `owned`.
        return (self.tracer_provider, self.meter_provider, self.logger_provider)

    def force_flush(self, timeout_millis: int = 10_000) -> None:
        for provider in self._providers():
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                flush(timeout_millis)

    def shutdown(self) -> None:
        """Stop observing runs, flush what can be flushed, stop the Prometheus server."""
        if self._closed:
            return
        self._closed = True
        if self._subscription is not None:
            _withdraw(*self._subscription)
        if self._server is not None:
            self._server.stop()
        if self.registry is not None and default_registry() is self.registry:
            set_default_registry(None)
        for provider, owned in zip(self._providers(), self._owned, strict=True):
            try:
                if owned:
                    provider.shutdown()
                    continue
                reader = self._prometheus_reader
                if reader is not None and hasattr(provider, "remove_metric_reader"):
                    provider.remove_metric_reader(reader)
                flush = getattr(provider, "force_flush", None)
                if flush is not None:
                    flush(5_000)
            except Exception:
                logger.warning("telemetry provider shutdown failed", exc_info=True)


# Providers configure() built: a global provider among them is not "the application's own".
_built: weakref.WeakSet[Any] = weakref.WeakSet()


def _queue_length(processor: Any) -> int:
    inner = getattr(processor, "_batch_processor", None)
    queue = getattr(inner, "_queue", None)
    return 0 if queue is None else len(queue)


def existing_providers() -> tuple[Any, Any, Any]:
    """The process's own global tracer, meter and logger providers, None where it has none.

    Set by the application or by `opentelemetry-instrument`; proxies, no-op providers and those
    a previous `configure()` built do not count.
    """
    tracer: Any = trace.get_tracer_provider()
    meter: Any = metrics.get_meter_provider()
    logs: Any = _logs.get_logger_provider()

    def own(provider: Any, placeholders: tuple[str, ...]) -> Any:
        if type(provider).__name__ in placeholders or provider in _built:
            return None
        return provider

    return (
        own(tracer, ("ProxyTracerProvider", "NoOpTracerProvider")),
        own(meter, ("_ProxyMeterProvider", "NoOpMeterProvider")),
        own(logs, ("ProxyLoggerProvider", "NoOpLoggerProvider")),
    )


def configure(
    service_name: str = "scorewatch",
    prometheus: str | None = names.DEFAULT_PROMETHEUS_ADDRESS,
    otlp: bool | str | None = None,
    *,
    otlp_protocol: OtlpProtocol | None = None,
    otlp_timeout_s: float | None = None,
    capture_content: CaptureContent = None,
    export_queue_size: int = 2048,
    metric_export_interval_s: float | None = None,
    set_global: bool = True,
    cardinality_limit: int = names.DEFAULT_CARDINALITY_LIMIT,
    prometheus_server: bool = True,
    observers: Observers = OBSERVERS,
) -> TelemetryHandle:
    """Set up OpenTelemetry (or join the process's own) and instrument scorewatch.

    With `set_global` (the default), global SDK providers the process already has (set up by
    the application or by `opentelemetry-instrument`) are used as they are: no second set of
    providers or exporters; only the Prometheus reader is added to its MeterProvider. Signals
    without such a provider get one of scorewatch's, which becomes the global one.
    `set_global=False` builds a private pipeline and touches no global.

    `prometheus`: `"host:port"` of the scrape endpoint (port 0: a free port), or None for none;
    the registry is also what `prometheus_asgi_app()` serves. `prometheus_server=False` keeps
    the registry but starts no HTTP server of its own, for an application that serves
    `prometheus_asgi_app()` on its own port (`scorewatch serve`). Push exporters follow
    `OTEL_{TRACES,METRICS,LOGS}_EXPORTER` (`otlp`, `console`, `none`, comma lists); without
    them OTLP is used when an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable is set. `otlp` overrides
    the environment: True always exports over OTLP (standard variables and defaults), a URL
    exports there, False never. The protocol is `otlp_protocol`, else
    `OTEL_EXPORTER_OTLP_[SIGNAL_]PROTOCOL`, else http/protobuf; `otlp_timeout_s` bounds each
    export (default: `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s). Spans and events wait in
    bounded queues (`export_queue_size`; the oldest are dropped when full), so an unreachable
    collector costs neither time nor unbounded memory in scorer runs. `observers` is the event
    bus instrumented (default: the process's).
    """
    resource = _resource(service_name)
    plan = export_plan(otlp)
    endpoint = otlp if isinstance(otlp, str) else None
    found_tracer, found_meter, found_logs = existing_providers() if set_global else (None,) * 3

    def batched(
        kinds: Iterable[str],
        exporter: Callable[..., Any],
        processor: Callable[..., P],
        add: Callable[[P], None],
    ) -> list[P]:
        """One bounded batch processor per requested exporter of a signal, each `add`ed to
        its provider."""
        processors = [
            processor(
                exporter(kind, endpoint, otlp_protocol, otlp_timeout_s),
                max_queue_size=export_queue_size,
                max_export_batch_size=min(512, export_queue_size),
            )
            for kind in kinds
        ]
        for each in processors:
            add(each)
        return processors

    span_processors: list[BatchSpanProcessor] = []
    log_processors: list[BatchLogRecordProcessor] = []
    tracer_provider: Any = found_tracer
    if tracer_provider is None:
        # Records spans only once a processor receives them: with no trace exporter, runs pay
        # for span ids (score_trace_id, exemplars), not for spans nobody gets.
        tracer_provider = ExportAwareTracerProvider(resource=resource)
        span_processors = batched(
            plan.traces, span_exporter, BatchSpanProcessor, tracer_provider.add_span_processor
        )
    logger_provider: Any = found_logs
    if logger_provider is None:
        # Knows whether a processor takes records: with no log exporter, a run's evaluation
        # event is not even asked for (`events_unreceived`).
        logger_provider = ExportAwareLoggerProvider(resource=resource)
        log_processors = batched(
            plan.logs,
            log_exporter,
            BatchLogRecordProcessor,
            logger_provider.add_log_record_processor,
        )

    registry: CollectorRegistry | None = None
    prometheus_reader: MetricReader | None = None
    if prometheus is not None:
        registry = CollectorRegistry(auto_describe=True)
        prometheus_reader = prometheus_metric_reader(registry)
    meter_provider: Any = found_meter
    if meter_provider is None:
        readers: list[MetricReader] = [] if prometheus_reader is None else [prometheus_reader]
        interval = None if metric_export_interval_s is None else metric_export_interval_s * 1000
        for kind in plan.metrics:
            readers.append(
                PeriodicExportingMetricReader(
                    metric_exporter(kind, endpoint, otlp_protocol, otlp_timeout_s),
                    export_interval_millis=interval,
                )
            )
        meter_provider = SdkMeterProvider(
            resource=resource, metric_readers=readers, views=metric_views()
        )
    elif prometheus_reader is not None:
        if hasattr(meter_provider, "add_metric_reader"):
            meter_provider.add_metric_reader(prometheus_reader)
        else:
            logger.warning(
                "the process's MeterProvider takes no new reader: no Prometheus endpoint"
            )
            registry = prometheus_reader = None
    owned = (found_tracer is None, found_meter is None, found_logs is None)
    built = [
        p
        for p, mine in zip((tracer_provider, meter_provider, logger_provider), owned, strict=True)
        if mine
    ]
    _built.update(built)

    server = None
    if registry is not None and prometheus_server:
        try:
            server = PrometheusServer(prometheus, registry)
        except OSError:
            # The address is taken or invalid: leave nothing half set up behind.
            for provider in built:
                provider.shutdown()
            if not owned[1] and prometheus_reader is not None:
                meter_provider.remove_metric_reader(prometheus_reader)
            raise
    if registry is not None:
        set_default_registry(registry)

    if set_global:
        _set_globals(tracer_provider, meter_provider, logger_provider)
    handle = TelemetryHandle(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        registry=registry,
        server=server,
        span_processors=span_processors,
        log_processors=log_processors,
        owned=owned,
        prometheus_reader=prometheus_reader,
        exporters=ExportPlan(
            plan.traces if owned[0] else (),
            plan.metrics if owned[1] else (),
            plan.logs if owned[2] else (),
        ),
    )
    with _lock:  # the observer withdrawn at shutdown is the one subscribed here
        instrument(
            tracer_provider,
            meter_provider,
            logger_provider,
            capture_content,
            cardinality_limit=cardinality_limit,
            observers=observers,
        )
        observer = _subscribed(observers)
    handle._subscription = None if observer is None else (observers, observer)
    return handle


def _set_globals(tracer_provider: Any, meter_provider: Any, logger_provider: Any) -> None:
    # The OpenTelemetry API lets a global provider be set once; an application's own set-up wins.
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        trace.set_tracer_provider(tracer_provider)
    if type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider":
        metrics.set_meter_provider(meter_provider)
    if type(_logs.get_logger_provider()).__name__ == "ProxyLoggerProvider":
        _logs.set_logger_provider(logger_provider)
