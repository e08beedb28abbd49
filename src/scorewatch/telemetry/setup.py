"""`instrument`/`uninstrument` (observe scorer runs) and `configure` (the one-call SDK set-up)."""

from __future__ import annotations

import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry import _logs, metrics, trace
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import TracerProvider
from prometheus_client import CollectorRegistry

from ..core.hooks import add_run_observer, remove_run_observer
from ..live.observers import add_live_observer, remove_live_observer, total_queue_depth
from ..live.queue_observers import add_queue_observer, remove_queue_observer
from . import names
from .cardinality import CardinalityGuard
from .content import CaptureContent, resolve_capture
from .instruments import Instruments, metric_views
from .listener import TelemetryObserver
from .live_metrics import LiveMetrics
from .prometheus import PrometheusServer, default_registry, set_default_registry

__all__ = [
    "OtlpProtocol",
    "TelemetryHandle",
    "configure",
    "instrument",
    "is_instrumented",
    "live_metrics",
    "uninstrument",
]

logger = logging.getLogger("scorewatch.telemetry")

OtlpProtocol = Literal["grpc", "http/protobuf"]
_VERSION = "0.1.0"


@dataclass(slots=True)
class _Instrumentation:
    observer: TelemetryObserver
    live: LiveMetrics
    instruments: Instruments


_lock = threading.RLock()
_active: _Instrumentation | None = None
_instruments: weakref.WeakKeyDictionary[MeterProvider, Instruments] = weakref.WeakKeyDictionary()


def instrument(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    capture_content: CaptureContent = None,
    *,
    cardinality_limit: int = names.DEFAULT_CARDINALITY_LIMIT,
) -> None:
    """Start deriving spans, metrics and evaluation events from every scorer run.

    Providers left None are the global ones (resolved lazily, so a global set later still
    counts). Calling it again replaces the previous instrumentation.
    """
    global _active
    provider = meter_provider or metrics.get_meter_provider()
    with _lock:
        # One set of instruments per MeterProvider: the SDK keeps the first registration of a
        # name (and its callbacks), so instruments made again would never report.
        instruments = _instruments.get(provider)
        if instruments is None:
            instruments = Instruments(provider, total_queue_depth)
            _instruments[provider] = instruments
    observer = TelemetryObserver(
        tracer=trace.get_tracer(
            names.INSTRUMENTATION_SCOPE, _VERSION, tracer_provider=tracer_provider
        ),
        event_logger=_logs.get_logger(
            names.INSTRUMENTATION_SCOPE, _VERSION, logger_provider=logger_provider
        ),
        instruments=instruments,
        capture=resolve_capture(capture_content),
        target_guard=CardinalityGuard(cardinality_limit),
        model_guard=CardinalityGuard(cardinality_limit),
    )
    live = LiveMetrics(instruments)
    with _lock:
        uninstrument()
        instruments.active = True
        add_run_observer(observer)
        add_live_observer(live)
        add_queue_observer(instruments.queue)
        _active = _Instrumentation(observer, live, instruments)


def uninstrument() -> None:
    """Stop observing runs. Instruments stay in their MeterProvider but receive nothing more."""
    global _active
    with _lock:
        current, _active = _active, None
        if current is None:
            return
        remove_run_observer(current.observer)
        remove_live_observer(current.live)
        remove_queue_observer(current.instruments.queue)
        current.instruments.active = False


def is_instrumented() -> bool:
    return _active is not None


def live_metrics() -> LiveMetrics | None:
    """The live-scoring metrics of the active instrumentation, or None when not instrumented."""
    current = _active
    return None if current is None else current.live


# -- configure ---------------------------------------------------------------------------------

_SIGNALS = ("TRACES", "METRICS", "LOGS")


def _otlp_from_env() -> bool:
    keys = ["OTEL_EXPORTER_OTLP_ENDPOINT"] + [f"OTEL_EXPORTER_OTLP_{s}_ENDPOINT" for s in _SIGNALS]
    return any(os.environ.get(key) for key in keys)


def _protocol(signal: str, explicit: OtlpProtocol | None) -> OtlpProtocol:
    if explicit is not None:
        return explicit
    value = (
        os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if value == "grpc":
        return "grpc"
    if value not in ("http/protobuf", ""):
        logger.warning("OTLP protocol %r is not supported; using http/protobuf", value)
    return "http/protobuf"


def _http_endpoint(base: str | None, path: str) -> str | None:
    return None if base is None else base.rstrip("/") + path


def _span_exporter(
    endpoint: str | None, protocol: OtlpProtocol, timeout: float | None
) -> SpanExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=endpoint, insecure=_insecure(endpoint), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    return HttpSpanExporter(endpoint=_http_endpoint(endpoint, "/v1/traces"), timeout=timeout)


def _metric_exporter(
    endpoint: str | None, protocol: OtlpProtocol, timeout: float | None
) -> MetricExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter(endpoint=endpoint, insecure=_insecure(endpoint), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )

    return HttpMetricExporter(endpoint=_http_endpoint(endpoint, "/v1/metrics"), timeout=timeout)


def _log_exporter(
    endpoint: str | None, protocol: OtlpProtocol, timeout: float | None
) -> LogRecordExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        return OTLPLogExporter(endpoint=endpoint, insecure=_insecure(endpoint), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    return HttpLogExporter(endpoint=_http_endpoint(endpoint, "/v1/logs"), timeout=timeout)


def _insecure(endpoint: str | None) -> bool | None:
    # None lets the exporter read OTEL_EXPORTER_OTLP_*_INSECURE and the endpoint scheme itself.
    return None if endpoint is None else endpoint.startswith("http://")


def _resource(service_name: str) -> Resource:
    # OTEL_SERVICE_NAME, when set, names the service; `service_name` is the fallback.
    if os.environ.get("OTEL_SERVICE_NAME"):
        return Resource.create()
    return Resource.create({"service.name": service_name})


class TelemetryHandle:
    """What `configure` set up: the SDK providers, the Prometheus endpoint, the OTLP exporters."""

    def __init__(
        self,
        *,
        tracer_provider: SdkTracerProvider,
        meter_provider: SdkMeterProvider,
        logger_provider: SdkLoggerProvider,
        registry: CollectorRegistry | None,
        server: PrometheusServer | None,
        span_processor: BatchSpanProcessor | None,
        log_processor: BatchLogRecordProcessor | None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.logger_provider = logger_provider
        self.registry = registry
        self._server = server
        self._span_processor = span_processor
        self._log_processor = log_processor
        self._closed = False

    @property
    def prometheus_port(self) -> int | None:
        return None if self._server is None else self._server.port

    @property
    def prometheus_url(self) -> str | None:
        return None if self._server is None else self._server.url

    def export_queue_lengths(self) -> dict[str, int]:
        """Spans and log records waiting for the OTLP exporters (bounded by the queue size)."""
        return {
            "spans": _queue_length(self._span_processor),
            "logs": _queue_length(self._log_processor),
        }

    def force_flush(self, timeout_millis: int = 10_000) -> None:
        self.tracer_provider.force_flush(timeout_millis)
        self.logger_provider.force_flush(timeout_millis)
        self.meter_provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Stop observing runs, flush what can be flushed, stop the Prometheus server."""
        if self._closed:
            return
        self._closed = True
        global _owner
        with _lock:
            if _owner is self:
                _owner = None
                uninstrument()
        if self._server is not None:
            self._server.stop()
        if self.registry is not None and default_registry() is self.registry:
            set_default_registry(None)
        for provider in (self.tracer_provider, self.logger_provider, self.meter_provider):
            try:
                provider.shutdown()
            except Exception:
                logger.warning("telemetry provider shutdown failed", exc_info=True)


_owner: TelemetryHandle | None = None


def _queue_length(processor: Any) -> int:
    inner = getattr(processor, "_batch_processor", None)
    queue = getattr(inner, "_queue", None)
    return 0 if queue is None else len(queue)


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
) -> TelemetryHandle:
    """Set up OpenTelemetry for an application that has none, and instrument scorewatch.

    `prometheus`: `"host:port"` of the scrape endpoint (port 0: a free port), or None for none;
    the registry is also what `prometheus_asgi_app()` serves. `prometheus_server=False` keeps
    the registry but starts no HTTP server of its own, for an application that serves
    `prometheus_asgi_app()` on its own port (`scorewatch serve`). `otlp`: None exports over
    OTLP only when an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable is set; True always (standard
    variables and defaults); a URL exports there; False never. The protocol is `otlp_protocol`, else
    `OTEL_EXPORTER_OTLP_[SIGNAL_]PROTOCOL`, else http/protobuf; `otlp_timeout_s` bounds each
    export (default: `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s). Spans and events wait in
    bounded queues (`export_queue_size`; the oldest are dropped when full), so an unreachable
    collector costs neither time nor unbounded memory in scorer runs.
    """
    global _owner
    resource = _resource(service_name)
    export = _otlp_from_env() if otlp is None else otlp is not False
    endpoint = otlp if isinstance(otlp, str) else None

    tracer_provider = SdkTracerProvider(resource=resource)
    logger_provider = SdkLoggerProvider(resource=resource)
    readers: list[MetricReader] = []
    registry: CollectorRegistry | None = None
    span_processor: BatchSpanProcessor | None = None
    log_processor: BatchLogRecordProcessor | None = None

    if prometheus is not None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        registry = CollectorRegistry(auto_describe=True)
        readers.append(PrometheusMetricReader(registry=registry, scope_info_enabled=False))
    if export:
        span_processor = BatchSpanProcessor(
            _span_exporter(endpoint, _protocol("TRACES", otlp_protocol), otlp_timeout_s),
            max_queue_size=export_queue_size,
            max_export_batch_size=min(512, export_queue_size),
        )
        tracer_provider.add_span_processor(span_processor)
        log_processor = BatchLogRecordProcessor(
            _log_exporter(endpoint, _protocol("LOGS", otlp_protocol), otlp_timeout_s),
            max_queue_size=export_queue_size,
            max_export_batch_size=min(512, export_queue_size),
        )
        logger_provider.add_log_record_processor(log_processor)
        interval = None if metric_export_interval_s is None else metric_export_interval_s * 1000
        readers.append(
            PeriodicExportingMetricReader(
                _metric_exporter(endpoint, _protocol("METRICS", otlp_protocol), otlp_timeout_s),
                export_interval_millis=interval,
            )
        )
    meter_provider = SdkMeterProvider(
        resource=resource, metric_readers=readers, views=metric_views()
    )

    server = None
    if prometheus is not None and registry is not None and prometheus_server:
        try:
            server = PrometheusServer(prometheus, registry)
        except OSError:
            # The address is taken or invalid: leave nothing half set up behind.
            for provider in (tracer_provider, logger_provider, meter_provider):
                provider.shutdown()
            raise
    if prometheus is not None and registry is not None:
        set_default_registry(registry)

    if set_global:
        _set_globals(tracer_provider, meter_provider, logger_provider)
    handle = TelemetryHandle(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        registry=registry,
        server=server,
        span_processor=span_processor,
        log_processor=log_processor,
    )
    with _lock:
        instrument(
            tracer_provider,
            meter_provider,
            logger_provider,
            capture_content,
            cardinality_limit=cardinality_limit,
        )
        _owner = handle
    return handle


def _set_globals(
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    logger_provider: SdkLoggerProvider,
) -> None:
    # The OpenTelemetry API lets a global provider be set once; an application's own set-up wins.
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        trace.set_tracer_provider(tracer_provider)
    if type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider":
        metrics.set_meter_provider(meter_provider)
    if type(_logs.get_logger_provider()).__name__ == "ProxyLoggerProvider":
        _logs.set_logger_provider(logger_provider)
