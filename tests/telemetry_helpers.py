"""Shared set-up for the telemetry tests: in-memory exporters and small scorers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import scorewatch as sw
from scorewatch import telemetry
from scorewatch.telemetry.content import CaptureContent


@dataclass
class Point:
    attributes: dict[str, Any]
    value: float | None = None
    count: int | None = None
    sum: float | None = None
    bucket_counts: list[int] | None = None
    bounds: list[float] | None = None


class InMemoryTelemetry:
    def __init__(self) -> None:
        self.span_exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.span_exporter))
        self.metric_reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(
            metric_readers=[self.metric_reader], views=telemetry.metric_views()
        )
        self.log_exporter = InMemoryLogRecordExporter()
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))

    def spans(self) -> list[ReadableSpan]:
        return list(self.span_exporter.get_finished_spans())

    def spans_named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def span(self, name: str) -> ReadableSpan:
        (found,) = self.spans_named(name)
        return found

    def logs(self) -> list[ReadableLogRecord]:
        return list(self.log_exporter.get_finished_logs())

    def points(self, name: str) -> list[Point]:
        data = self.metric_reader.get_metrics_data()
        found: list[Point] = []
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
                                Point(
                                    attributes,
                                    count=point.count,
                                    sum=point.sum,
                                    bucket_counts=list(point.bucket_counts),
                                    bounds=list(point.explicit_bounds),
                                )
                            )
                        else:
                            found.append(Point(attributes, value=point.value))  # type: ignore[union-attr]
        return found

    def point(self, name: str, **attributes: Any) -> Point:
        matches = [
            p
            for p in self.points(name)
            if all(p.attributes.get(k.replace("__", ".")) == v for k, v in attributes.items())
        ]
        assert len(matches) == 1, (name, attributes, [m.attributes for m in self.points(name)])
        return matches[0]


@contextmanager
def in_memory_telemetry(
    capture_content: CaptureContent = None, cardinality_limit: int = 100
) -> Iterator[InMemoryTelemetry]:
    sink = InMemoryTelemetry()
    telemetry.instrument(
        sink.tracer_provider,
        sink.meter_provider,
        sink.logger_provider,
        capture_content=capture_content,
        cardinality_limit=cardinality_limit,
    )
    try:
        yield sink
    finally:
        telemetry.uninstrument()
        sink.tracer_provider.shutdown()
        sink.logger_provider.shutdown()
        sink.meter_provider.shutdown()


ANALYSIS_SCHEMA = {
    "type": "object",
    "properties": {"verdicts": {"type": "array", "items": {"type": "string"}}},
    "required": ["verdicts"],
}


def prompt_scorer(judge: sw.JudgeModel, scorer_id: str = "quality", **kwargs: Any) -> sw.Scorer:
    """preprocess (function) -> analyze (prompt) -> generate_score (function) -> reason (prompt)."""
    return (
        sw.create_scorer(
            id=scorer_id,
            description="test scorer",
            judge=sw.JudgeConfig(model=judge, instructions="You are a strict judge."),
            **kwargs,
        )
        .preprocess(lambda ctx: {"words": len(str(ctx.run.output).split())})
        .analyze(
            sw.PromptStep(
                description="find verdicts",
                create_prompt=lambda ctx: f"SECRET-PROMPT about {ctx.run.output}",
                output_schema=ANALYSIS_SCHEMA,
            )
        )
        .generate_score(lambda ctx: len(ctx.results.analyze_step_result["verdicts"]) / 4)
        .generate_reason(
            sw.PromptStep(
                description="explain",
                create_prompt=lambda ctx: f"SECRET-REASON-PROMPT score={ctx.score}",
            )
        )
    )


def verdicts(n: int) -> str:
    return json.dumps({"verdicts": ["yes"] * n})
