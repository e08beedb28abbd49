"""A `BoundHistogram` exports exactly what the SDK's own `Histogram.record` exports.

Two meter providers of the same set-up (scorewatch's instruments and views) are fed the same
measurements in the same span contexts, one through `Histogram.record`, the other through bound
series; their OTLP encodings and their Prometheus text (OpenMetrics, exemplars included) must
agree but for timestamps. The bound path must actually be taken where the SDK allows it (else
the comparison would prove nothing), and must not be where it cannot (delta temporality).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.metrics import Histogram
from opentelemetry.sdk.metrics import Histogram as SdkHistogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricReader,
)
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from prometheus_client import CollectorRegistry

import scorewatch as sw
from scorewatch.core.events import Observers, observed_by
from scorewatch.telemetry.bound import EXEMPLAR_STREAMS, BoundHistogram, sdk_shaped
from scorewatch.telemetry.exposition import render_openmetrics, render_text
from scorewatch.telemetry.instruments import Instruments, metric_views
from scorewatch.telemetry.listener import TelemetryObserver
from scorewatch.telemetry.prometheus import EXEMPLAR_METRICS, prometheus_metric_reader
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import in_memory_telemetry, prompt_scorer, verdicts

pytestmark = pytest.mark.unit

# Attribute sets as runs have them, plus an empty one and one of mixed value types.
SETS: Sequence[dict[str, Any]] = (
    {"gen_ai.evaluation.name": "q", "scorewatch.step": "analyze", "scorewatch.step.type": "f"},
    {"gen_ai.evaluation.name": "q", "scorewatch.outcome": "success"},
    {"gen_ai.evaluation.name": "r", "scorewatch.score_source": "live", "scorewatch.target": "t"},
    {},
    {"n": 3, "flag": True, "ratio": 0.5, "gen_ai.evaluation.name": "q"},
)
# (histogram of `Instruments`, its series are each of SETS)
HISTOGRAMS: Sequence[Callable[[Instruments], Histogram]] = (
    lambda ins: ins.step_duration,
    lambda ins: ins.run_duration,
    lambda ins: ins.score_histogram(1.0),
    lambda ins: ins.score_histogram(10.0),
)

VALUES = st.one_of(
    st.sampled_from([0.0, -0.0, 0.05, 0.5, 1.0, 5.0, 10.0, 0.01, 2.56, -1.0, math.nan, math.inf]),
    st.floats(min_value=0.0, max_value=12.0),
    st.integers(min_value=0, max_value=3),
)
# (histogram, attribute set, value, context: 0 none, 1 sampled span, 2 unsampled, collect after)
OPERATIONS = st.lists(
    st.tuples(
        st.integers(0, len(HISTOGRAMS) - 1),
        st.integers(0, len(SETS) - 1),
        VALUES,
        st.integers(0, 2),
        st.booleans(),
    ),
    min_size=1,
    max_size=40,
)

_TRACER = TracerProvider().get_tracer("bound-test")


class Side:
    """One meter provider with scorewatch's instruments: `bound` records through bound series."""

    def __init__(self, readers: Sequence[MetricReader], bound: bool, views: Sequence[View]):
        self.readers = list(readers)
        self.provider = MeterProvider(metric_readers=self.readers, views=list(views))
        self.instruments = Instruments(self.provider)
        self.bound = bound
        self.series: dict[tuple[int, int], BoundHistogram] = {}

    def record(self, histogram: int, attributes: int, value: float) -> None:
        instrument = HISTOGRAMS[histogram](self.instruments)
        if not self.bound:
            instrument.record(value, SETS[attributes])
            return
        key = (histogram, attributes)
        if key not in self.series:
            self.series[key] = BoundHistogram(instrument, SETS[attributes])
        self.series[key].record(value)


@contextmanager
def _context(kind: int) -> Iterator[None]:
    if kind == 0:
        yield
    elif kind == 1:
        with _TRACER.start_as_current_span("run"):
            yield
    else:
        unsampled = SpanContext(0x1F, 0x2F, is_remote=False, trace_flags=TraceFlags(0))
        token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(unsampled)))
        try:
            yield
        finally:
            otel_context.detach(token)


def _otlp(reader: InMemoryMetricReader) -> dict[str, Any]:
    """The reader's collection as OTLP would send it, every timestamp zeroed."""
    data = reader.get_metrics_data()
    if data is None:
        return {}
    request = encode_metrics(data)
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                kind = metric.WhichOneof("data")
                for point in getattr(metric, kind).data_points:
                    point.start_time_unix_nano = point.time_unix_nano = 0
                    for exemplar in point.exemplars:
                        exemplar.time_unix_nano = 0
    return {"request": request.SerializeToString(deterministic=True)}


def _feed(
    sides: Sequence[Side],
    operations: Sequence[tuple[int, int, float, int, bool]],
    collect: Callable[[], None],
) -> None:
    for histogram, attributes, value, kind, collect_after in operations:
        with _context(kind):
            for side in sides:
                side.record(histogram, attributes, value)
        if collect_after:
            collect()


@pytest.mark.skipif(not sdk_shaped(), reason="the installed SDK has no internals to bind to")
def test_the_installed_sdk_is_bound_to() -> None:
    """The fast path is taken with the SDK scorewatch installs (or a test of it is moot)."""
    side = Side([InMemoryMetricReader()], bound=True, views=metric_views())
    series = BoundHistogram(side.instruments.step_duration, SETS[0])
    assert not series.bound  # the first measurement goes through the SDK, which makes the set
    series.record(0.5)
    assert series.bound
    series.record(-1.0)  # warned about and dropped by the SDK, binding unchanged
    assert series.bound


@settings(max_examples=120, deadline=None)
@given(operations=OPERATIONS)
def test_otlp_export_is_the_sdks(operations: list[tuple[int, int, float, int, bool]]) -> None:
    # A view keeping one attribute of the run duration, and a cardinality limit the five sets
    # overflow, so filtered keys and the overflow series are compared too.
    views = [
        *metric_views(),
        View(instrument_name="scorewatch.scorer.run.duration", attribute_keys={"n"}),
    ]
    limits = {SdkHistogram: 3}
    plain = Side([InMemoryMetricReader(cardinality_limits=limits)], bound=False, views=views)
    bound = Side([InMemoryMetricReader(cardinality_limits=limits)], bound=True, views=views)
    compared: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def collect() -> None:
        compared.append((_otlp(plain.readers[0]), _otlp(bound.readers[0])))  # type: ignore[arg-type]

    _feed((plain, bound), operations, collect)
    collect()
    for expected, got in compared:
        assert got == expected
    accepted = {(h, a) for h, a, v, _k, _c in operations if 0.0 <= v < math.inf}
    assert all(bound.series[key].bound for key in accepted)


def _prometheus_texts(
    operations: Sequence[tuple[int, int, float, int, bool]],
) -> list[tuple[str, str]]:
    """The OpenMetrics and 0.0.4 texts of a plain and a bound side fed `operations`, at each
    collection, timestamps masked."""
    registries = (CollectorRegistry(), CollectorRegistry())
    plain, bound = (
        Side([prometheus_metric_reader(registry)], bound=flag, views=metric_views())
        for registry, flag in zip(registries, (False, True), strict=True)
    )
    texts: list[tuple[str, str]] = []

    def collect() -> None:
        for render in (render_openmetrics, render_text):
            a, b = (_untimed(render(registry).decode()) for registry in registries)
            texts.append((a, b))

    _feed((plain, bound), operations, collect)
    collect()
    return texts


@settings(max_examples=40, deadline=None)
@given(operations=OPERATIONS)
def test_prometheus_text_is_the_sdks(operations: list[tuple[int, int, float, int, bool]]) -> None:
    for expected, got in _prometheus_texts(operations):
        assert got == expected


def test_prometheus_exemplars_are_the_sdks() -> None:
    operations = [(2, 2, 0.3, 1, False), (2, 2, 0.9, 1, True), (2, 2, 0.95, 1, False)]
    operations += [(2, 2, 0.31, 0, False), (1, 1, 0.2, 1, False)]
    texts = _prometheus_texts(operations)
    assert all(got == expected for expected, got in texts)
    # The last OpenMetrics text: buckets 0.3, 0.9 and 0.95 (0.31 was recorded unsampled).
    assert texts[-2][0].count(" # {") == 3


def _untimed(text: str) -> str:
    # `_created` samples and exemplar timestamps are times of the recording, not data.
    text = re.sub(r"^(\S+_created(?:\{[^}]*\})?) \S+$", r"\1 T", text, flags=re.MULTILINE)
    return re.sub(r"^(.* # \{[^}]*\} \S+) \S+$", r"\1 T", text, flags=re.MULTILINE)


def test_a_delta_reader_keeps_the_sdks_path_and_its_output() -> None:
    delta = {SdkHistogram: AggregationTemporality.DELTA}
    plain = Side([InMemoryMetricReader(preferred_temporality=delta)], bound=False, views=())
    bound = Side([InMemoryMetricReader(preferred_temporality=delta)], bound=True, views=())
    operations = [(0, 0, 0.25, 1, True), (0, 0, 0.5, 1, False), (0, 0, 3.0, 0, True)]
    compared: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def collect() -> None:
        compared.append((_otlp(plain.readers[0]), _otlp(bound.readers[0])))  # type: ignore[arg-type]

    _feed((plain, bound), operations, collect)
    assert not bound.series[(0, 0)].bound
    assert compared and all(got == expected for expected, got in compared)


def test_a_reader_added_later_is_fed_as_the_sdk_feeds_it() -> None:
    plain = Side([InMemoryMetricReader()], bound=False, views=metric_views())
    bound = Side([InMemoryMetricReader()], bound=True, views=metric_views())
    _feed((plain, bound), [(0, 0, 0.25, 1, False), (2, 1, 0.7, 1, False)], lambda: None)
    assert bound.series[(0, 0)].bound
    for side in (plain, bound):
        reader = InMemoryMetricReader()
        side.provider.add_metric_reader(reader)
        side.readers.append(reader)
    assert not bound.series[(0, 0)].bound  # the SDK replaced its readers: bound again
    _feed((plain, bound), [(0, 0, 0.5, 1, False), (2, 1, 0.1, 0, False)] * 3, lambda: None)
    assert bound.series[(0, 0)].bound
    for index in range(2):
        assert _otlp(bound.readers[index]) == _otlp(plain.readers[index])  # type: ignore[arg-type]


async def test_a_runs_histograms_are_recorded_bound() -> None:
    """The listener's step, run and score series take the bound path from the second run."""
    scorer = (
        sw.create_scorer(id="bound", description="d")
        .preprocess(lambda ctx: 1)
        .generate_score(lambda ctx: 0.75)
    )
    bus = Observers()
    with observed_by(bus), in_memory_telemetry(observers=bus) as otel:
        for _ in range(3):
            await scorer.run(input="q", output="a")
        (observer,) = bus.subscribers
        assert isinstance(observer, TelemetryObserver)
        profile = observer.profile(scorer)
        series = [
            *profile.step_durations.values(),
            *(bound for bound, _key in profile.by_outcome.values()),
            *(bound for bound, _key in profile.score_series.values()),
        ]
        assert len(series) == 4 and all(s.bound for s in series) == sdk_shaped()
        step = otel.point("scorewatch.scorer.step.duration", scorewatch__step="preprocess")
        assert step.count == 3
        assert (
            otel.point("scorewatch.evaluation.score", gen_ai__evaluation__name="bound").sum == 2.25
        )


async def test_a_judge_attempts_histograms_are_recorded_bound() -> None:
    """Token usage and call duration of a prompt step's attempts take the bound path from the
    scorer's second attempt under the same model, step and outcome; the totals are the judge
    records'."""
    bus = Observers()
    usage = sw.judge.JudgeUsage(input_tokens=120, output_tokens=7)
    judge = ScriptedJudge([verdicts(2), "ok"] * 3, usage=usage)
    scorer = prompt_scorer(judge)
    with observed_by(bus), in_memory_telemetry(observers=bus) as otel:
        for index in range(3):
            await scorer.run(output=f"answer {index}")
        (observer,) = bus.subscribers
        assert isinstance(observer, TelemetryObserver)
        series = [s for known in observer.profile(scorer).attempt_series.values() for s in known]
        assert len(series) == 6  # two prompt steps: input, output, duration each
        assert all(s.bound for s in series) == sdk_shaped()
        inputs = [
            point
            for point in otel.points("gen_ai.client.token.usage")
            if point.attributes["gen_ai.token.type"] == "input"
        ]
        assert sum(point.sum or 0 for point in inputs) == 6 * 120
        durations = otel.points("gen_ai.client.operation.duration")
        assert sum(point.count or 0 for point in durations) == 6


def test_a_reader_that_exports_no_exemplars_of_a_stream_is_offered_none() -> None:
    """The Prometheus reader keeps the exemplars of the score and judge-call duration only: a
    bound step or run duration feeds its aggregations without the reservoir, while a reader
    that exports every stream's exemplars (OTLP's, here in memory) gets them as the SDK gives
    them. Both readers' outputs are the SDK's."""
    registries = (CollectorRegistry(), CollectorRegistry())
    plain, bound = (
        Side([prometheus_metric_reader(registry), InMemoryMetricReader()], flag, metric_views())
        for registry, flag in zip(registries, (False, True), strict=True)
    )
    prometheus = bound.readers[0]
    assert set(getattr(prometheus, EXEMPLAR_STREAMS)) == set(EXEMPLAR_METRICS)

    def exemplars(side: Side, reader: MetricReader) -> dict[str, int]:
        # What the SDK collected for `reader`, before the reader keeps or drops anything.
        data = side.provider._measurement_consumer.collect(reader)  # type: ignore[attr-defined]
        return {
            metric.name: sum(len(point.exemplars) for point in metric.data.data_points)
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }

    # Step and run durations, then a score, each in a sampled span. The first measurement of a
    # series goes through the SDK (which binds it): its exemplars are collected away first.
    operations = [(0, 0, 0.25, 1, False), (1, 1, 0.5, 1, False), (2, 2, 0.75, 1, False)]
    _feed((plain, bound), operations, lambda: None)
    exemplars(plain, plain.readers[0]), exemplars(bound, bound.readers[0])
    _feed((plain, bound), operations * 2, lambda: None)
    assert all(series.bound for series in bound.series.values())

    in_memory = (plain.readers[1], bound.readers[1])
    assert _otlp(in_memory[1]) == _otlp(in_memory[0])  # type: ignore[arg-type]
    for render in (render_openmetrics, render_text):
        a, b = (_untimed(render(registry).decode()) for registry in registries)
        assert b == a and (render is render_text or " # {" in a)

    _feed((plain, bound), operations, lambda: None)
    got, expected = exemplars(bound, bound.readers[0]), exemplars(plain, plain.readers[0])
    assert expected["scorewatch.scorer.step.duration"] > 0  # the SDK offers them (then dropped)
    assert got["scorewatch.scorer.step.duration"] == got["scorewatch.scorer.run.duration"] == 0
    assert got["scorewatch.evaluation.score"] == expected["scorewatch.evaluation.score"] > 0
