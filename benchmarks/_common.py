"""Shared pieces of the benchmark suite: the scorers measured, telemetry set-ups, statistics.

Nothing here reaches the network: judges are scripted in-process or served on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

TWELVE_WORDS = "Machine learning is a subset of artificial intelligence that learns from data."
QUESTION = "What is machine learning?"


def quality_scorer() -> Any:
    """The four-step function-only scorer of the reference page (the "Quality Scorer")."""
    import scorewatch as sw

    return (
        sw.create_scorer(
            id="quality", name="Quality Scorer", description="Evaluates response quality"
        )
        .preprocess(lambda ctx: {"word_count": len(ctx.run.output.split(" "))})
        .analyze(
            lambda ctx: {"has_substance": ctx.results.preprocess_step_result["word_count"] > 10}
        )
        .generate_score(
            lambda ctx: 1.0 if ctx.results.analyze_step_result["has_substance"] else 0.0
        )
        .generate_reason(
            lambda ctx: (
                f"Score: {ctx.score}. Response has "
                f"{ctx.results.preprocess_step_result['word_count']} words."
            )
        )
    )


# -- telemetry set-ups ---------------------------------------------------------------------------


@dataclass
class InMemoryTelemetry:
    """SDK providers exporting into memory (spans and events synchronously, metrics on demand)."""

    span_exporter: Any
    log_exporter: Any
    metric_reader: Any
    tracer_provider: Any
    meter_provider: Any
    logger_provider: Any

    def clear(self) -> None:
        self.span_exporter.clear()
        self.log_exporter.clear()


def instrument_in_memory(batch: bool = False) -> InMemoryTelemetry:
    """In-memory exporters behind synchronous processors (export on the caller's thread, so
    its cost is counted), or behind the batching ones a service uses with `batch=True`."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import (
        BatchLogRecordProcessor,
        InMemoryLogRecordExporter,
        SimpleLogRecordProcessor,
    )
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from scorewatch import telemetry

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(
        BatchSpanProcessor(spans) if batch else SimpleSpanProcessor(spans)
    )
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(logs) if batch else SimpleLogRecordProcessor(logs)
    )
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], views=telemetry.metric_views())
    telemetry.instrument(tracer_provider, meter_provider, logger_provider)
    return InMemoryTelemetry(spans, logs, reader, tracer_provider, meter_provider, logger_provider)


def configure_prometheus() -> Any:
    """`telemetry.configure` as a service runs it: Prometheus reader, no OTLP, no own server."""
    from scorewatch import telemetry

    return telemetry.configure(
        prometheus="127.0.0.1:0", otlp=False, set_global=False, prometheus_server=False
    )


# -- statistics and machine --------------------------------------------------------------------


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
        "n": len(values),
    }


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": sys.version.split()[0],
        "load": os.getloadavg(),
    }


def rss_bytes() -> int:
    """Resident set size of this process, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# -- the loopback judge in a process of its own -------------------------------------------------


def start_judge(latency: float, *extra: str) -> tuple[subprocess.Popen[str], int]:
    script = str(BENCH_DIR / "_judge_process.py")
    process = subprocess.Popen(
        [sys.executable, script, "--latency", str(latency), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        process.kill()
        raise RuntimeError(f"judge process did not start: {line!r}")
    return process, int(line.split()[1])


def stop_judge(process: subprocess.Popen[str]) -> int:
    out, _ = process.communicate(input="", timeout=30)
    for line in out.splitlines():
        if line.startswith("REQUESTS "):
            return int(line.split()[1])
    return -1


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process so far, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def emit(result: dict[str, Any], path: str | None) -> None:
    """Write one benchmark's result as JSON (to `path`, else stdout)."""
    text = json.dumps(result, indent=2)
    if path:
        Path(path).write_text(text)
    else:
        print(text)


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: bytes
    close: bool
    """The server said `Connection: close`: the connection cannot be reused."""


async def read_answer(reader: asyncio.StreamReader) -> HttpAnswer:
    """One HTTP/1.1 answer from `reader`: the benchmarks' clients speak raw HTTP so the client's
    own cost stays out of the latencies they measure."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = head.split(b"\r\n")
    length = 0
    close = False
    for line in lines:
        name, _, value = line.partition(b":")
        key = name.strip().lower()
        if key == b"content-length":
            length = int(value)
        elif key == b"connection" and value.strip().lower() == b"close":
            close = True
    body = await reader.readexactly(length)
    return HttpAnswer(int(status_line.split(b" ", 2)[1]), body, close)


def _pass_timer_options(cmd: list[str], args: Any) -> None:
    cmd.extend(["--timer", args.timer])
    if args.only:
        cmd.extend(["--only", args.only])


def timed_runner(names: Sequence[str]) -> tuple[Any, Any, set[str]]:
    """A pyperf runner with `--timer wall|cpu` and `--only NAME,...` (passed on to its worker
    processes), its parsed arguments, and the chosen benchmark names (all without `--only`);
    an unknown name ends the run naming the known ones."""
    import pyperf

    runner = pyperf.Runner(add_cmdline_args=_pass_timer_options)
    runner.argparser.add_argument("--timer", choices=("wall", "cpu"), default="wall")
    runner.argparser.add_argument("--only", default="", help="comma-separated benchmark names")
    args = runner.parse_args()
    chosen = set(args.only.split(",")) if args.only else set(names)
    unknown = chosen - set(names)
    if unknown:
        raise SystemExit(f"unknown benchmarks: {sorted(unknown)}; known: {json.dumps(list(names))}")
    return runner, args, chosen
