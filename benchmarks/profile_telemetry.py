"""Where a telemetry-instrumented run's time goes, and what the OpenTelemetry SDK alone costs.

    .venv/bin/python benchmarks/profile_telemetry.py [--variant in-memory|prometheus] [--runs 3000]

Three measurements (CPU time of the calling thread, median of 7 batches after a warm-up batch;
the batches of (1) and (2) alternate):

0. the quality scorer's run before anything is instrumented (what the run costs without
   telemetry, so "telemetry per run" is the instrumented run less this);
1. the quality scorer's run with telemetry instrumented, as benchmark #1 runs it;
2. the SDK floor: the same SDK calls made DIRECTLY through the OpenTelemetry SDK with no
   scorewatch code at all, with the attributes a run has — one run span (made current), four
   step spans (each made current), six histogram measurements (four step durations, the run
   duration, the score) with prebuilt attribute dicts, two counter additions (the run counter
   and the squared-score sum), the logs API's `enabled()` check and one evaluation event. The
   floor is what a plain SDK instrumentation pays for the same exported output: scorewatch
   tallies the two counters (`telemetry/tally.py`), but a plain instrumentation would `add`, so
   the floor does. (Until 2026-12-06 the floor left both additions out; `--old-floor` also
   measures that floor, for comparison with the figures of before.)

Then a cProfile of (1), self time grouped by package, and the top functions. Prints Markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import _common
from _common import QUESTION, TWELVE_WORDS, quality_scorer

STEPS = ("preprocess", "analyze", "generate_score", "generate_reason")


def cpu_per_call_us(batch: Callable[[int], None], runs: int, after: Callable[[], None]) -> float:
    batch(runs // 4)
    after()
    values = []
    for _ in range(7):
        started = time.thread_time()
        batch(runs)
        values.append((time.thread_time() - started) / runs * 1e6)
        after()
    return statistics.median(values)


def paired_cpu_us(
    batches: Sequence[Callable[[int], None]], runs: int, after: Callable[[], None]
) -> list[float]:
    """`cpu_per_call_us` of each, their batches alternating (first, second, ..., first, ...),
    so a machine whose load changes meanwhile moves every side alike."""
    for batch in batches:
        batch(runs // 4)
        after()
    values: list[list[float]] = [[] for _ in batches]
    for _ in range(7):
        for batch, measured in zip(batches, values, strict=True):
            started = time.thread_time()
            batch(runs)
            measured.append((time.thread_time() - started) / runs * 1e6)
            after()
    return [statistics.median(measured) for measured in values]


def setup(variant: str) -> tuple[Any, Any, Any, Callable[[], None]]:
    """Instrument scorewatch; return the providers (traces, metrics, logs) and a cleanup."""
    if variant == "in-memory":
        memory = _common.instrument_in_memory()
        providers = (memory.tracer_provider, memory.meter_provider, memory.logger_provider)
        return (*providers, memory.clear)
    handle = _common.configure_prometheus()
    return handle.tracer_provider, handle.meter_provider, handle.logger_provider, lambda: None


def floor_batch(
    tracer_provider: Any, meter_provider: Any, logger_provider: Any, counters: bool = True
) -> Callable[[int], None]:
    """The SDK floor's runs; `counters=False`: without the two counter additions (the floor
    of before 2026-12-06, which a tallied counter wrongly made cheaper)."""
    from opentelemetry import context, trace
    from opentelemetry._logs import SeverityNumber

    tracer = tracer_provider.get_tracer("floor")
    meter = meter_provider.get_meter("floor")
    event_logger = logger_provider.get_logger("floor")
    step_duration = meter.create_histogram("floor.step.duration", unit="s")
    run_duration = meter.create_histogram("floor.run.duration", unit="s")
    histogram = meter.create_histogram("floor.score", unit="1")
    runs_counter = meter.create_counter("floor.runs")
    squares = meter.create_counter("floor.score.squares", unit="1")
    version = "1345abb4b4b7"  # the scorer's version fingerprint, on its spans and events
    run_id = "c553814e-ad5a-4810-a9f1-1ff13f344bf2"

    run_attributes = {
        "gen_ai.operation.name": "evaluation",
        "gen_ai.evaluation.name": "quality",
        "scorewatch.scorer.id": "quality",
        "scorewatch.scorer.name": "Quality Scorer",
        "scorewatch.scorer.version": version,
        "scorewatch.score_source": "direct",
        "scorewatch.run_id": run_id,
    }
    step_attributes = [
        {"scorewatch.step": step, "scorewatch.step.type": "function"} for step in STEPS
    ]
    step_metric_attributes = [
        {"gen_ai.evaluation.name": "quality", **attributes} for attributes in step_attributes
    ]
    outcome = {"gen_ai.evaluation.name": "quality", "scorewatch.outcome": "success"}
    score = {
        "gen_ai.evaluation.name": "quality",
        "scorewatch.score_source": "direct",
        "scorewatch.scorer.version": version,
    }
    event = {
        "gen_ai.evaluation.name": "quality",
        "scorewatch.scorer.version": version,
        "gen_ai.evaluation.score.value": 1.0,
        "scorewatch.run_id": run_id,
    }
    info = SeverityNumber.INFO

    def batch(runs: int) -> None:
        for _ in range(runs):
            span = tracer.start_span("evaluation quality", attributes=run_attributes)
            run_context = trace.set_span_in_context(span)
            token = context.attach(run_context)
            for index in range(4):
                step = tracer.start_span(
                    f"evaluation.step {STEPS[index]}",
                    context=run_context,
                    attributes=step_attributes[index],
                )
                step_token = context.attach(trace.set_span_in_context(step))
                context.detach(step_token)
                step.end()
                step_duration.record(1e-5, step_metric_attributes[index])
            run_duration.record(1e-4, outcome)
            if counters:
                runs_counter.add(1, outcome)
            histogram.record(1.0, score)
            if counters:
                squares.add(1.0, score)
            span.set_attribute("scorewatch.score", 1.0)
            if event_logger.enabled(
                context=run_context, severity_number=info, event_name="gen_ai.evaluation.result"
            ):
                event_logger.emit(
                    event_name="gen_ai.evaluation.result",
                    context=run_context,
                    severity_number=info,
                    severity_text="INFO",
                    attributes=event,
                )
            context.detach(token)
            span.end()

    return batch


def scorer_batch(loop: asyncio.AbstractEventLoop) -> Callable[[int], None]:
    scorer = quality_scorer()

    async def runs(count: int) -> None:
        for _ in range(count):
            await scorer.run(input=QUESTION, output=TWELVE_WORDS)

    return lambda count: loop.run_until_complete(runs(count))


# (part of a file's path, the group its functions' time is counted in), first match wins.
GROUPS: tuple[tuple[str, str], ...] = (
    ("opentelemetry/sdk/trace", "OpenTelemetry SDK: traces"),
    ("opentelemetry/sdk/metrics", "OpenTelemetry SDK: metrics"),
    ("opentelemetry/sdk/_logs", "OpenTelemetry SDK: logs"),
    ("opentelemetry/attributes", "OpenTelemetry: attribute cleaning"),
    ("opentelemetry", "OpenTelemetry API, context, exporters"),
    ("scorewatch/telemetry", "scorewatch telemetry listener"),
    ("scorewatch", "scorewatch core"),
    ("asyncio", "asyncio"),
)


def group_of(path: str, function: str, groups: tuple[tuple[str, str], ...] = GROUPS) -> str:
    for marker, name in groups:
        if marker in path:
            return name
    return f"builtin {function}" if path == "~" else "other Python"


def profile(batch: Callable[[int], None], runs: int, after: Callable[[], None]) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(4):
        batch(runs // 4)
        after()
    profiler.disable()
    stats = pstats.Stats(profiler)
    groups: collections.Counter[str] = collections.Counter()
    rows = []
    for (path, line, function), (_, calls, own, _cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        groups[group_of(path, function)] += own
        rows.append((own, calls, f"{path.rsplit('site-packages/', 1)[-1]}:{line}({function})"))
    total = sum(groups.values()) or 1.0
    lines = ["| self time share | group |", "|---:|---|"]
    lines += [f"| {t / total:5.1%} | {g} |" for g, t in groups.most_common(12)]
    lines += ["", "| self time share | calls/run | function |", "|---:|---:|---|"]
    for own, calls, name in sorted(rows, reverse=True)[:12]:
        lines.append(f"| {own / total:5.1%} | {calls / runs:.0f} | `{name}` |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("in-memory", "prometheus"), default="in-memory")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument(
        "--old-floor",
        action="store_true",
        help="also measure the floor without the two counter additions (before 2026-12-06)",
    )
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    run = scorer_batch(loop)
    bare = cpu_per_call_us(run, args.runs, lambda: None)  # before anything is instrumented
    tracer_provider, meter_provider, logger_provider, after = setup(args.variant)
    providers = (tracer_provider, meter_provider, logger_provider)
    batches = [run, floor_batch(*providers)]
    if args.old_floor:
        batches.append(floor_batch(*providers, counters=False))
    measured, sdk_only, *old = paired_cpu_us(batches, args.runs, after)
    telemetry = measured - bare
    print(f"### Telemetry ({args.variant}): CPU per quality-scorer run\n")
    print(f"- scorer run with telemetry: **{measured:.0f} µs** (without: {bare:.1f} µs)")
    print(
        f"- the SDK floor (the same SDK calls made directly through the SDK, no scorewatch "
        f"code): **{sdk_only:.0f} µs**"
    )
    print(
        f"- ratios: the instrumented run / floor **{measured / sdk_only:.2f}×**; its telemetry "
        f"(with - without, {telemetry:.0f} µs) / floor **{telemetry / sdk_only:.2f}×**"
    )
    for old_floor in old:
        print(
            f"- the floor without the two counter additions (before 2026-12-06): "
            f"{old_floor:.0f} µs; ratios {measured / old_floor:.2f}×, {telemetry / old_floor:.2f}×"
        )
    print(f"- so scorewatch's own share is at most {max(0.0, measured - sdk_only):.0f} µs\n")
    print(f"cProfile of the instrumented run ({args.runs} runs):\n")
    print(profile(run, args.runs, after))
    loop.close()


if __name__ == "__main__":
    main()
