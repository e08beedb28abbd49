"""`configure()` with no trace or log exporter records no span and builds no event nobody
receives, and keeps what needs span ids: each run's trace id and the exemplars of /metrics. A
processor added later receives what follows, as with any SDK provider."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk._logs import SynchronousMultiLogRecordProcessor
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import TraceFlags

import scorewatch as sw
from scorewatch import telemetry
from scorewatch.telemetry.exposition import render_openmetrics
from scorewatch.telemetry.unexported import (
    ExportAwareLoggerProvider,
    ExportAwareTracerProvider,
    events_unreceived,
    ids_only,
    new_root_ids,
)

pytestmark = pytest.mark.integration

_EXEMPLAR = re.compile(
    r'scorewatch_evaluation_score_bucket\{[^}]*\} \d+\.0 # \{span_id="([0-9a-f]{16})",'
    r'trace_id="([0-9a-f]{32})"\}'
)


@pytest.fixture
def handle() -> Iterator[telemetry.TelemetryHandle]:
    configured = telemetry.configure(prometheus="127.0.0.1:0", otlp=False, set_global=False)
    try:
        yield configured
    finally:
        configured.shutdown()


def _scorer() -> sw.Scorer:
    return sw.create_scorer(id="plain", description="a constant").generate_score(lambda ctx: 0.75)


async def test_without_an_exporter_runs_keep_their_trace_ids_and_exemplars(
    handle: telemetry.TelemetryHandle,
) -> None:
    provider = handle.tracer_provider
    assert isinstance(provider, ExportAwareTracerProvider) and not provider.exporting
    traces = set()
    for _ in range(3):
        result = await _scorer().run(output="x")
        assert result.score_trace_id is not None and re.fullmatch(
            "[0-9a-f]{32}", result.score_trace_id
        )
        traces.add(result.score_trace_id)
    assert len(traces) == 3  # a trace of its own per run, as a recorded span would have

    # Nothing recorded the spans, yet the score histogram's exemplar names the last run.
    assert handle.registry is not None
    found = _EXEMPLAR.findall(render_openmetrics(handle.registry).decode())
    assert found and {trace_id for _span, trace_id in found} <= traces

    # Spans are not recorded: one started by the scorer's tracer holds ids, nothing else.
    span = provider.get_tracer("check").start_span("unexported", attributes={"a": 1})
    assert not span.is_recording()
    assert span.get_span_context().is_valid and span.get_span_context().trace_flags.sampled


async def test_a_processor_added_later_receives_the_runs_that_follow(
    handle: telemetry.TelemetryHandle,
) -> None:
    await _scorer().run(output="before")
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    handle.tracer_provider.add_span_processor(SimpleSpanProcessor(spans))  # type: ignore[attr-defined]
    handle.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))  # type: ignore[attr-defined]

    result = await _scorer().run(output="after")
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == ["evaluation.step generate_score", "evaluation plain"]
    run_span = finished[-1]
    assert run_span.attributes is not None and run_span.attributes["scorewatch.score"] == 0.75
    assert format(run_span.context.trace_id, "032x") == result.score_trace_id
    events = logs.get_finished_logs()
    assert len(events) == 1  # the run before the processor built no event
    assert events[0].log_record.event_name == "gen_ai.evaluation.result"
    assert events[0].log_record.attributes is not None
    assert events[0].log_record.attributes["gen_ai.evaluation.score.value"] == 0.75


async def test_an_ids_only_run_starts_a_span_for_the_run_and_none_for_its_steps(
    handle: telemetry.TelemetryHandle,
) -> None:
    seen: list[trace.SpanContext] = []

    def current(value: float) -> float:
        seen.append(trace.get_current_span().get_span_context())
        return value

    scorer = (
        sw.create_scorer(id="steps", description="two steps")
        .preprocess(lambda ctx: current(1.0))
        .generate_score(lambda ctx: current(0.5))
    )
    assert ids_only(handle.tracer_provider.get_tracer("check"))
    result = await scorer.run(output="x")
    # Both steps ran under the run's span (no span of their own), whose trace is the result's.
    assert len(seen) == 2 and seen[0] == seen[1] and seen[0].trace_flags.sampled
    assert format(seen[0].trace_id, "032x") == result.score_trace_id
    assert handle.registry is not None
    found = _EXEMPLAR.findall(render_openmetrics(handle.registry).decode())
    assert (format(seen[0].span_id, "016x"), result.score_trace_id) in found

    spans = InMemorySpanExporter()
    handle.tracer_provider.add_span_processor(SimpleSpanProcessor(spans))  # type: ignore[attr-defined]
    assert not ids_only(handle.tracer_provider.get_tracer("check"))
    seen.clear()
    await scorer.run(output="y")
    names = [s.name for s in spans.get_finished_spans()]
    assert names == [
        "evaluation.step preprocess",
        "evaluation.step generate_score",
        "evaluation steps",
    ]
    assert seen[0].span_id != seen[1].span_id  # each step's own span, once recorded


def test_events_are_unreceived_exactly_while_the_sdk_logger_takes_none() -> None:
    provider = ExportAwareLoggerProvider()
    logger = provider.get_logger("check")

    def enabled() -> bool:
        return logger.enabled(
            context=Context(),
            severity_number=SeverityNumber.INFO,
            event_name="gen_ai.evaluation.result",
        )

    assert events_unreceived(provider) and not enabled()
    provider.add_log_record_processor(SimpleLogRecordProcessor(InMemoryLogRecordExporter()))
    assert not events_unreceived(provider) and enabled()
    # A processor handed to the constructor counts; any other provider is always asked.
    given = ExportAwareLoggerProvider(
        multi_log_record_processor=SynchronousMultiLogRecordProcessor()
    )
    assert not events_unreceived(given)
    assert not events_unreceived(SdkLoggerProvider())
    assert not events_unreceived(None)


def test_configure_without_a_log_exporter_builds_an_unreceived_logger_provider(
    handle: telemetry.TelemetryHandle,
) -> None:
    assert isinstance(handle.logger_provider, ExportAwareLoggerProvider)
    assert events_unreceived(handle.logger_provider)


def test_a_sampler_of_its_own_is_never_ids_only() -> None:
    # Its decision may depend on a span's name or attributes: every span is started.
    provider = ExportAwareTracerProvider(sampler=ALWAYS_OFF)
    assert not ids_only(provider.get_tracer("check"))
    assert ids_only(ExportAwareTracerProvider().get_tracer("check"))
    assert not ids_only(trace.NoOpTracer())
    provider.shutdown()


def test_the_sampler_still_decides_the_flags() -> None:
    provider = ExportAwareTracerProvider(sampler=ALWAYS_OFF)
    tracer = provider.get_tracer("check")
    with tracer.start_as_current_span("root") as root:
        assert not root.is_recording()
        assert not root.get_span_context().trace_flags.sampled
        assert trace.get_current_span() is root
        child = tracer.start_span("child")
        # A child continues its parent's trace, as the SDK's spans do.
        assert child.get_span_context().trace_id == root.get_span_context().trace_id
        assert child.get_span_context().span_id != root.get_span_context().span_id
    provider.shutdown()


def test_the_default_sampler_follows_the_parent_as_the_sdk_does() -> None:
    provider = ExportAwareTracerProvider()
    tracer = provider.get_tracer("check")
    state = trace.TraceState([("vendor", "value")])
    for flags in (trace.TraceFlags.DEFAULT, trace.TraceFlags.SAMPLED):
        remote = trace.SpanContext(
            0xABC, 0xDEF, is_remote=True, trace_flags=trace.TraceFlags(flags), trace_state=state
        )
        parent = trace.set_span_in_context(trace.NonRecordingSpan(remote))
        child = tracer.start_span("child", context=parent).get_span_context()
        assert child.trace_id == 0xABC and child.trace_state == state
        assert child.trace_flags.sampled == bool(flags & trace.TraceFlags.SAMPLED)
    root = tracer.start_span("root").get_span_context()
    assert root.trace_flags.sampled and len(root.trace_state) == 0
    provider.shutdown()


def test_new_root_ids_are_the_ids_the_sdk_generator_draws() -> None:
    """One `getrandbits(192)` draws what `generate_trace_id()` then `generate_span_id()` draw:
    under the same seed the ids are equal, and the generator is left in the same state."""
    generator = RandomIdGenerator()
    for seed in range(200):
        random.seed(seed)
        expected = (generator.generate_trace_id(), generator.generate_span_id())
        after_sdk = random.getrandbits(32)
        random.seed(seed)
        assert new_root_ids(generator) == expected
        assert random.getrandbits(32) == after_sdk


def test_new_root_ids_ask_any_other_generator() -> None:
    class Counting(IdGenerator):
        def generate_trace_id(self) -> int:
            return 7

        def generate_span_id(self) -> int:
            return 9

    assert new_root_ids(Counting()) == (7, 9)


def test_an_ids_only_root_span_has_the_sdk_flags_and_fresh_ids() -> None:
    provider = ExportAwareTracerProvider()
    tracer = provider.get_tracer("test")
    spans = [tracer.start_span("run", context=Context()) for _ in range(50)]
    contexts = [span.get_span_context() for span in spans]
    assert all(context.is_valid and not context.is_remote for context in contexts)
    assert {int(context.trace_flags) for context in contexts} == {
        TraceFlags.SAMPLED | TraceFlags.RANDOM_TRACE_ID
    }
    assert len({context.trace_id for context in contexts}) == 50
    assert len({context.span_id for context in contexts}) == 50


async def test_an_ids_only_run_times_each_step_in_the_series_a_recorded_run_does(
    handle: telemetry.TelemetryHandle,
) -> None:
    """An ids-only run keeps no open step: each step's duration is found from its outcome,
    in the same series (scorer, step, step type) a run with a span processor records."""
    scorer = (
        sw.create_scorer(id="timed", description="two steps")
        .preprocess(lambda ctx: 1.0)
        .generate_score(lambda ctx: 0.5)
    )
    assert handle.registry is not None

    def step_counts() -> list[str]:
        text = render_openmetrics(handle.registry).decode()  # type: ignore[arg-type]
        return sorted(
            line
            for line in text.splitlines()
            if line.startswith("scorewatch_scorer_step_duration_seconds_count")
            and 'evaluation_name="timed"' in line
        )

    await scorer.run(output="x")
    await scorer.run(output="y")
    quiet = step_counts()
    assert len(quiet) == 2 and all(line.endswith(" 2.0") for line in quiet)
    assert any('scorewatch_step="preprocess"' in line for line in quiet)

    handle.tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))  # type: ignore[attr-defined]
    await scorer.run(output="z")
    assert step_counts() == [line.removesuffix(" 2.0") + " 3.0" for line in quiet]
