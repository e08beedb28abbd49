"""The loopback OTLP receiver (tests/otlp_receiver.py, a helper of this suite) decodes what the
real OTLP exporters send, over gRPC and HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetrics,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetrics,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, StatusCode

from otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.integration


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def _exporters(receiver: OtlpReceiver, transport: str) -> tuple[object, object, object]:
    if transport == "grpc":
        endpoint = receiver.grpc_endpoint
        return (
            GrpcSpans(endpoint=endpoint, insecure=True),
            GrpcMetrics(endpoint=endpoint, insecure=True),
            GrpcLogs(endpoint=endpoint, insecure=True),
        )
    base = receiver.http_endpoint
    return (
        HttpSpans(endpoint=f"{base}/v1/traces"),
        HttpMetrics(endpoint=f"{base}/v1/metrics"),
        HttpLogs(endpoint=f"{base}/v1/logs"),
    )


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_receives_spans_metrics_and_logs(receiver: OtlpReceiver, transport: str) -> None:
    span_exporter, metric_exporter, log_exporter = _exporters(receiver, transport)
    resource = Resource.create({"service.name": "receiver-test"})

    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))  # type: ignore[arg-type]
    tracer = tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("parent") as parent:
        with tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child:
            child.set_attribute("answer", 42)
            child.set_attribute("labels", ["a", "b"])
            child.set_status(StatusCode.ERROR, "boom")
        parent_id = parent.get_span_context().span_id

    meter_provider = MeterProvider(
        resource=resource,
        metric_readers=[
            PeriodicExportingMetricReader(metric_exporter, export_interval_millis=3_600_000)  # type: ignore[arg-type]
        ],
    )
    meter = meter_provider.get_meter("test")
    meter.create_counter("things").add(3, {"kind": "x"})
    meter.create_histogram(
        "sizes", unit="s", explicit_bucket_boundaries_advisory=[1.0, 10.0]
    ).record(5.0, {"kind": "y"})

    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))  # type: ignore[arg-type]
    logger_provider.get_logger("test").emit(
        event_name="test.event", body="hello", attributes={"k": "v"}
    )

    meter_provider.force_flush()
    receiver.wait_for(lambda r: r.spans() and r.metric_points() and r.log_records(), timeout=15)

    (child_span,) = receiver.spans_named("child")
    assert child_span.transport == transport
    assert child_span.kind == "CLIENT"
    assert child_span.attributes == {"answer": 42, "labels": ["a", "b"]}
    assert child_span.status_code == "ERROR"
    assert child_span.status_message == "boom"
    assert child_span.parent_span_id == format(parent_id, "016x")
    assert child_span.resource["service.name"] == "receiver-test"

    (counter,) = receiver.latest_metric_points("things")
    assert counter.kind == "sum"
    assert counter.value == 3
    assert counter.attributes == {"kind": "x"}
    (histogram,) = receiver.latest_metric_points("sizes")
    assert histogram.count == 1
    assert histogram.sum == 5.0
    assert histogram.explicit_bounds == [1.0, 10.0]
    assert histogram.bucket_counts == [0, 1, 0]

    (record,) = receiver.log_records("test.event")
    assert record.body == "hello"
    assert record.attributes == {"k": "v"}

    tracer_provider.shutdown()
    meter_provider.shutdown()
    logger_provider.shutdown()


def test_wait_for_times_out(receiver: OtlpReceiver) -> None:
    with pytest.raises(TimeoutError):
        receiver.wait_for(lambda r: r.spans(), timeout=0.3)


def test_http_rejects_garbage_and_unknown_paths(receiver: OtlpReceiver) -> None:
    import httpx

    bad = httpx.post(f"{receiver.http_endpoint}/v1/traces", content=b"\xff\xff\xff")
    assert bad.status_code == 400
    missing = httpx.post(f"{receiver.http_endpoint}/v1/nothing", content=b"")
    assert missing.status_code == 404
    assert receiver.requests == []
