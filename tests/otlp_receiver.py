"""A loopback OTLP receiver for tests: gRPC and HTTP/protobuf, traces, metrics and logs.

It stands in for an OpenTelemetry Collector (none is installable on the project's machines) so
that tests can point the real OTLP exporters at it and assert on what arrived. Both transports
listen on 127.0.0.1 on random free ports; every decoded request is kept in memory.

    with OtlpReceiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True)
        ...
        receiver.wait_for(lambda r: r.spans_named("evaluation quality"), timeout=10)
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self

import grpc
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = [
    "OtlpReceiver",
    "ReceivedLogRecord",
    "ReceivedMetricPoint",
    "ReceivedRequest",
    "ReceivedSpan",
]

Signal = Literal["traces", "metrics", "logs"]
Transport = Literal["grpc", "http"]

_SPAN_KINDS = {
    0: "UNSPECIFIED",
    1: "INTERNAL",
    2: "SERVER",
    3: "CLIENT",
    4: "PRODUCER",
    5: "CONSUMER",
}
_STATUS_CODES = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _attributes(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {pair.key: _any_value(pair.value) for pair in pairs}


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    signal: Signal
    transport: Transport
    message: Message


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status_code: str
    status_message: str
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str, dict[str, Any]]]
    resource: dict[str, Any]
    scope: str
    transport: Transport


@dataclass(frozen=True, slots=True)
class ReceivedMetricPoint:
    """One data point. `value` for sums and gauges; count/sum/buckets for histograms."""

    name: str
    kind: str
    unit: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    value: float | None = None
    count: int | None = None
    sum: float | None = None
    bucket_counts: list[int] = field(default_factory=list)
    explicit_bounds: list[float] = field(default_factory=list)
    time_unix_nano: int = 0
    transport: Transport = "grpc"


@dataclass(frozen=True, slots=True)
class ReceivedLogRecord:
    event_name: str
    body: Any
    attributes: dict[str, Any]
    severity_number: int
    severity_text: str
    trace_id: str
    span_id: str
    resource: dict[str, Any]
    transport: Transport


def _spans(request: ExportTraceServiceRequest, transport: Transport) -> list[ReceivedSpan]:
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        kind=_SPAN_KINDS.get(span.kind, str(span.kind)),
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes=_attributes(span.attributes),
                        status_code=_STATUS_CODES.get(span.status.code, str(span.status.code)),
                        status_message=span.status.message,
                        events=[(e.name, _attributes(e.attributes)) for e in span.events],
                        links=[
                            (link.trace_id.hex(), link.span_id.hex(), _attributes(link.attributes))
                            for link in span.links
                        ],
                        resource=resource,
                        scope=scope_spans.scope.name,
                        transport=transport,
                    )
                )
    return spans


def _number(point: Any) -> float | None:
    kind = point.WhichOneof("value")
    return None if kind is None else float(getattr(point, kind))


def _metric_points(
    request: ExportMetricsServiceRequest, transport: Transport
) -> list[ReceivedMetricPoint]:
    points: list[ReceivedMetricPoint] = []
    for resource_metrics in request.resource_metrics:
        resource = _attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data") or ""
                common = {
                    "name": metric.name,
                    "kind": kind,
                    "unit": metric.unit,
                    "resource": resource,
                    "transport": transport,
                }
                if kind in ("sum", "gauge"):
                    for number_point in getattr(metric, kind).data_points:
                        points.append(
                            ReceivedMetricPoint(
                                **common,
                                attributes=_attributes(number_point.attributes),
                                value=_number(number_point),
                                time_unix_nano=number_point.time_unix_nano,
                            )
                        )
                elif kind == "histogram":
                    for hist_point in metric.histogram.data_points:
                        points.append(
                            ReceivedMetricPoint(
                                **common,
                                attributes=_attributes(hist_point.attributes),
                                count=hist_point.count,
                                sum=hist_point.sum,
                                bucket_counts=list(hist_point.bucket_counts),
                                explicit_bounds=list(hist_point.explicit_bounds),
                                time_unix_nano=hist_point.time_unix_nano,
                            )
                        )
    return points


def _log_records(
    request: ExportLogsServiceRequest, transport: Transport
) -> list[ReceivedLogRecord]:
    records: list[ReceivedLogRecord] = []
    for resource_logs in request.resource_logs:
        resource = _attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                records.append(
                    ReceivedLogRecord(
                        event_name=record.event_name,
                        body=_any_value(record.body),
                        attributes=_attributes(record.attributes),
                        severity_number=record.severity_number,
                        severity_text=record.severity_text,
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        resource=resource,
                        transport=transport,
                    )
                )
    return records


_REQUEST_TYPES: dict[Signal, tuple[type[Message], type[Message]]] = {
    "traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
}
_GRPC_SERVICES: dict[Signal, str] = {
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
}
_HTTP_PATHS: dict[str, Signal] = {
    "/v1/traces": "traces",
    "/v1/metrics": "metrics",
    "/v1/logs": "logs",
}


class OtlpReceiver:
    """Collects OTLP export requests on 127.0.0.1 over gRPC and HTTP/protobuf.

    `grpc_endpoint` and `http_endpoint` are the base URLs to give the exporters (the HTTP
    exporters want the signal path appended, e.g. `receiver.http_endpoint + "/v1/traces"`, unless
    configured through `OTEL_EXPORTER_OTLP_ENDPOINT`, which appends it itself).
    """

    def __init__(self, *, grpc_enabled: bool = True, http_enabled: bool = True) -> None:
        self._grpc_enabled = grpc_enabled
        self._http_enabled = http_enabled
        self._condition = threading.Condition()
        self._requests: list[ReceivedRequest] = []
        self._grpc_server: Any = None
        self._http_server: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self.grpc_port: int | None = None
        self.http_port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        if self._grpc_enabled:
            self._start_grpc()
        if self._http_enabled:
            self._start_http()
        return self

    def stop(self) -> None:
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None).wait(5)
            self._grpc_server = None
        if self._http_server is not None:
            self._http_server.shutdown()
            self._http_server.server_close()
            self._http_server = None
        if self._http_thread is not None:
            self._http_thread.join(5)
            self._http_thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def grpc_endpoint(self) -> str:
        if self.grpc_port is None:
            raise RuntimeError("the gRPC receiver is not running")
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def http_endpoint(self) -> str:
        if self.http_port is None:
            raise RuntimeError("the HTTP receiver is not running")
        return f"http://127.0.0.1:{self.http_port}"

    # -- recording ---------------------------------------------------------------------------

    def _record(self, signal: Signal, transport: Transport, message: Message) -> None:
        with self._condition:
            self._requests.append(ReceivedRequest(signal, transport, message))
            self._condition.notify_all()

    def _start_grpc(self) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        for signal, service in _GRPC_SERVICES.items():
            request_type, response_type = _REQUEST_TYPES[signal]

            def export(
                request: Message,
                context: Any,
                signal: Signal = signal,
                response_type: type[Message] = response_type,
            ) -> Message:
                self._record(signal, "grpc", request)
                return response_type()

            handler = grpc.unary_unary_rpc_method_handler(
                export,
                request_deserializer=request_type.FromString,
                response_serializer=response_type.SerializeToString,
            )
            server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(service, {"Export": handler}),)
            )
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._grpc_server = server
        self.grpc_port = int(port)

    def _start_http(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                signal = _HTTP_PATHS.get(self.path.split("?", 1)[0])
                if signal is None:
                    self.send_error(404)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                try:
                    if encoding == "gzip":
                        body = gzip.decompress(body)
                    elif encoding == "deflate":
                        body = zlib.decompress(body)
                    request_type, response_type = _REQUEST_TYPES[signal]
                    message = request_type.FromString(body)
                except (DecodeError, OSError, zlib.error):
                    self.send_error(400, "undecodable OTLP payload")
                    return
                receiver._record(signal, "http", message)
                payload = response_type().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                # The test output is not the place for an access log.
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._http_server = server
        self.http_port = int(server.server_address[1])
        self._http_thread = threading.Thread(
            target=server.serve_forever, name="otlp-receiver-http", daemon=True
        )
        self._http_thread.start()

    # -- queries -----------------------------------------------------------------------------

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._condition:
            return list(self._requests)

    def clear(self) -> None:
        with self._condition:
            self._requests.clear()

    def spans(self) -> list[ReceivedSpan]:
        return [
            span
            for request in self.requests
            if request.signal == "traces"
            for span in _spans(request.message, request.transport)
        ]

    def spans_named(self, name: str) -> list[ReceivedSpan]:
        return [span for span in self.spans() if span.name == name]

    def metric_points(self, name: str | None = None) -> list[ReceivedMetricPoint]:
        """Every data point received, in arrival order (cumulative exports repeat series)."""
        return [
            point
            for request in self.requests
            if request.signal == "metrics"
            for point in _metric_points(request.message, request.transport)
            if name is None or point.name == name
        ]

    def latest_metric_points(self, name: str) -> list[ReceivedMetricPoint]:
        """The last point of each attribute set of metric `name`."""
        latest: dict[tuple[tuple[str, str], ...], ReceivedMetricPoint] = {}
        for point in self.metric_points(name):
            key = tuple(sorted((k, repr(v)) for k, v in point.attributes.items()))
            previous = latest.get(key)
            if previous is None or point.time_unix_nano >= previous.time_unix_nano:
                latest[key] = point
        return list(latest.values())

    def log_records(self, event_name: str | None = None) -> list[ReceivedLogRecord]:
        return [
            record
            for request in self.requests
            if request.signal == "logs"
            for record in _log_records(request.message, request.transport)
            if event_name is None or record.event_name == event_name
        ]

    def wait_for(self, predicate: Callable[[OtlpReceiver], object], timeout: float = 10.0) -> bool:
        """Wait until `predicate(self)` is truthy; raises TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                if predicate(self):
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"OTLP receiver: condition not met within {timeout} s")
                self._condition.wait(min(remaining, 0.2))
