"""In-memory OpenTelemetry for tests: what scorewatch emits, kept in lists to assert on.

Shipped as `scorewatch.testing.InMemoryTelemetry` / `in_memory_telemetry` (the test helpers
re-export it); it lives here because only `telemetry` builds OpenTelemetry SDK providers.

    with in_memory_telemetry() as otel:
        await scorer.run(input="q", output="a")
        otel.span("evaluation quality")                        # the run span
        otel.point("scorewatch.scorer.runs", scorewatch__outcome="success").value
        otel.evaluation_events()[0]["gen_ai.evaluation.score.value"]

Spans and events are exported synchronously as they end; metrics are collected when read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ..core.events import OBSERVERS, Observers
from . import names
from .content import CaptureContent
from .instruments import metric_views
from .setup import instrument, uninstrument

__all__ = ["InMemoryTelemetry", "MetricPoint", "in_memory_telemetry"]


@dataclass(slots=True)
class MetricPoint:
    """One collected data point: `value` for counters and gauges, the rest for histograms."""

    attributes: dict[str, Any]
    value: float | None = None
    count: int | None = None
    sum: float | None = None
    bucket_counts: list[int] | None = None
    bounds: list[float] | None = None


class InMemoryTelemetry:
    """A tracer, meter and logger provider whose output stays in memory.

    Pass the providers to `scorewatch.telemetry.instrument(...)` yourself, or use
    `in_memory_telemetry()`, which does and undoes that around a block. `tracer_provider` also
    serves the code under test (an agent span to link live runs to).
    """

    def __init__(self) -> None:
        self.span_exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.span_exporter))
        self.metric_reader = InMemoryMetricReader()
        # The same views as `configure()`: histograms keep scorewatch's bucket boundaries.
        self.meter_provider = MeterProvider(
            metric_readers=[self.metric_reader], views=metric_views()
        )
        self.log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))

    # -- spans ---------------------------------------------------------------------------------

    def spans(self) -> list[ReadableSpan]:
        """Finished spans, in the order they ended."""
        return list(self.span_exporter.get_finished_spans())

    def spans_named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def span(self, name: str) -> ReadableSpan:
        """The one finished span called `name` (fails when there are none or several)."""
        found = self.spans_named(name)
        if len(found) != 1:
            raise AssertionError(f"{len(found)} finished spans named {name!r}, expected 1")
        return found[0]

    # -- log records and evaluation events -----------------------------------------------------

    def logs(self) -> list[ReadableLogRecord]:
        """Every emitted log record (evaluation events included)."""
        return list(self.log_exporter.get_finished_logs())

    def evaluation_events(self) -> list[dict[str, Any]]:
        """The attributes of each `gen_ai.evaluation.result` event, one per scored run."""
        return [
            dict(record.log_record.attributes or {})
            for record in self.logs()
            if record.log_record.event_name == names.EVENT_EVALUATION_RESULT
        ]

    # -- metrics -------------------------------------------------------------------------------

    def points(self, name: str) -> list[MetricPoint]:
        """The current data points of the instrument called `name` (collected now)."""
        data = self.metric_reader.get_metrics_data()
        found: list[MetricPoint] = []
        if data is None:
            return found
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        attributes = dict(point.attributes or {})
                        if isinstance(point, HistogramDataPoint):
                            found.append(
                                MetricPoint(
                                    attributes,
                                    count=point.count,
                                    sum=point.sum,
                                    bucket_counts=list(point.bucket_counts),
                                    bounds=list(point.explicit_bounds),
                                )
                            )
                        elif isinstance(point, NumberDataPoint):
                            found.append(MetricPoint(attributes, value=point.value))
        return found

    def point(self, name: str, **attributes: Any) -> MetricPoint:
        """The one point of `name` whose attributes match; `__` in a keyword stands for `.`
        (`gen_ai__evaluation__name="quality"`)."""
        wanted = {key.replace("__", "."): value for key, value in attributes.items()}
        points = self.points(name)
        matches = [p for p in points if all(p.attributes.get(k) == v for k, v in wanted.items())]
        if len(matches) != 1:
            raise AssertionError(
                f"{len(matches)} points of {name!r} match {wanted}, expected 1; "
                f"points: {[p.attributes for p in points]}"
            )
        return matches[0]

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()
        self.meter_provider.shutdown()


@contextmanager
def in_memory_telemetry(
    capture_content: CaptureContent = None,
    cardinality_limit: int = names.DEFAULT_CARDINALITY_LIMIT,
    *,
    observers: Observers = OBSERVERS,
) -> Iterator[InMemoryTelemetry]:
    """Instrument scorewatch into a fresh `InMemoryTelemetry` for the block, then undo it.

    `observers` is the event bus to listen to: the process's by default, or a test's own (see
    `scorewatch.core.events.observed_by`), so that parallel tests do not see each other's runs.
    """
    otel = InMemoryTelemetry()
    instrument(
        otel.tracer_provider,
        otel.meter_provider,
        otel.logger_provider,
        capture_content=capture_content,
        cardinality_limit=cardinality_limit,
        observers=observers,
    )
    try:
        yield otel
    finally:
        uninstrument(observers)
        otel.shutdown()
