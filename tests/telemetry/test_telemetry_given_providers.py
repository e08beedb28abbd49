"""Telemetry uses the providers handed to `instrument()`, never the global ones behind the
user's back: with a different global tracer and meter provider set (as an application with its
own OpenTelemetry set-up has), the work queue's producer and consumer spans go to the given
tracer provider, and closing live scoring flushes the given providers and leaves the global
ones alone. Real Redis, real SDK providers with batching processors and periodic readers; the
globals are process-wide, so the scenario runs in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from scale_support import REDIS_URL, require_redis, unique_prefix
from scorewatch.telemetry import names

pytestmark = pytest.mark.integration

SCENARIO = textwrap.dedent(
    """
    import asyncio
    import json
    import sys

    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import scorewatch as sw
    from scorewatch import telemetry
    from scorewatch.live import CallbackSink, LiveScorerEntry, Sampling
    from scorewatch.core.call import AgentCall
    from scorewatch.server.intake.interface import ScoreItem
    from scorewatch.server.intake.redis_queue import RedisIntake
    from scorewatch.server.queue.stream import StreamNames, connect
    from scorewatch.server.queue.worker import StreamWorker

    HOUR_MS = 3_600_000  # nothing is exported before a flush


    class Exports(MetricExporter):
        # Counts the metric exports a reader made: a flush is one.
        def __init__(self):
            super().__init__()
            self.count = 0

        def export(self, metrics_data, timeout_millis=10_000, **kwargs):
            self.count += 1
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis=10_000):
            return True

        def shutdown(self, timeout_millis=30_000, **kwargs):
            pass


    def pipeline():
        spans, exports = InMemorySpanExporter(), Exports()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(
            BatchSpanProcessor(spans, schedule_delay_millis=HOUR_MS)
        )
        reader = PeriodicExportingMetricReader(exports, export_interval_millis=HOUR_MS)
        return tracer_provider, MeterProvider(metric_readers=[reader]), spans, exports


    url, prefix = sys.argv[1], sys.argv[2]
    app_tracer, app_meter, app_spans, app_exports = pipeline()
    trace.set_tracer_provider(app_tracer)  # the application's own, global
    metrics.set_meter_provider(app_meter)
    given_tracer, given_meter, given_spans, given_exports = pipeline()
    telemetry.instrument(tracer_provider=given_tracer, meter_provider=given_meter)

    scorer = sw.create_scorer(id="length", description="Output length").generate_score(
        lambda ctx: min(1.0, len(str(ctx.run.output)) / 100)
    )
    stream = StreamNames(f"{prefix}:work", f"{prefix}-workers", f"{prefix}:work:dead")


    async def queue_round_trip():
        stored = []
        intake = RedisIntake(
            {"length": LiveScorerEntry(scorer, sampling=Sampling.none())},
            client=connect(url),
            names=stream,
            max_backlog=100,
            stats_interval=0.1,
        )
        with trace.get_tracer("app").start_as_current_span("POST /v1/scores"):
            await intake.admit([ScoreItem(AgentCall(input="q", output="hello", target="bot"))])
        worker = StreamWorker(
            {"length": scorer},
            client=connect(url),
            names=stream,
            sinks=[CallbackSink(stored.append)],
            block_ms=100,
            stats_interval=0.1,
        )
        running = asyncio.create_task(worker.run(drain_timeout=5))
        for _ in range(600):
            if stored:
                break
            await asyncio.sleep(0.05)
        worker.stop()
        await running
        await intake.aclose()
        client = connect(url)
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
        return len(stored)


    scored = asyncio.run(queue_round_trip())
    metrics.get_meter("app").create_counter("app.requests").add(1)
    live = sw.LiveScoring({"length": scorer})
    live.close(5.0)  # tells the bus to flush, as when a process ends
    report = {
        "stream": stream.stream,
        "scored": scored,
        "given_spans": sorted(span.name for span in given_spans.get_finished_spans()),
        "given_metric_exports": given_exports.count,
        "app_spans_before_its_flush": len(app_spans.get_finished_spans()),
        "app_metric_exports_before_its_flush": app_exports.count,
    }
    app_tracer.force_flush()
    report["app_spans"] = sorted(span.name for span in app_spans.get_finished_spans())
    print(json.dumps(report))
    """
)


def test_queue_spans_and_the_flush_use_the_given_providers_not_the_global_ones() -> None:
    require_redis()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO, REDIS_URL, unique_prefix()],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["scored"] == 1
    # The producer span of the request and the worker's consumer span, on the given provider,
    # with the run's span; seen only because closing live scoring flushed the given provider.
    assert sorted(report["given_spans"]) == sorted(
        [
            names.queue_send_span_name(report["stream"]),
            names.queue_process_span_name(report["stream"]),
            names.run_span_name("length"),
            names.step_span_name("generate_score"),
        ]
    )
    assert report["given_metric_exports"] == 1
    # The application's providers were not flushed behind its back, and got none of ours.
    assert report["app_spans_before_its_flush"] == 0
    assert report["app_metric_exports_before_its_flush"] == 0
    assert report["app_spans"] == ["POST /v1/scores"]
