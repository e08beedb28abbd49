"""How many scorewatch source files one scored live call runs through, and how often it hops.

The baseline for issue 18's redesign (docs/architecture.md, "Measured"). One `LiveScoring`
watched call, scored by a model-free scorer (keyword coverage), stored by a `SqliteSink`, with
telemetry instrumented on in-memory OpenTelemetry providers: the same path as production minus
the network. A warm-up call runs first so imports and one-time set-up are not counted; then the
profiler records, in every thread (the SQLite writer thread included), each Python function call
whose code lives in src/scorewatch, from the watched call until `drain()` reports it stored.

Reported:
- files: distinct scorewatch source files with at least one function called;
- hops: calls from a function in one scorewatch file to a function in another (direct caller
  and callee both scorewatch code; a callback through asyncio or a thread is not a hop);
- edges: distinct (caller file, callee file) pairs among those hops.

`--traced` makes the watched call inside an agent's own span (a second, application tracer
provider), as in production with OpenTelemetry: the call then carries a trace id, so sampling
hashes it instead of drawing once.

`--judged` scores the call with a judged scorer instead: one prompt step (generate_score) whose
judge is a litellm model id, answered over real HTTP by `scorewatch.testing.LoopbackJudgeServer`
on 127.0.0.1. That is production's path (litellm's HTTP call, usage and cost, the judge record,
the chat span and judge metrics) minus the network; `ScriptedJudge` would answer in process and
skip the litellm judge entirely. The server runs on its own thread, started before profiling, so
only the client's side is counted; litellm's own code is not scorewatch's and is not counted.

Run from the repository root:
    PYTHONPATH=src python tools/measure_live_path.py [--traced] [--judged] [--list]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

import scorewatch
from scorewatch import telemetry
from scorewatch.core import JudgeConfig, PromptStep, Scorer, create_scorer
from scorewatch.live import LiveScorerEntry, LiveScoring, SqliteSink
from scorewatch.scorers.keyword_coverage import create_keyword_coverage_scorer
from scorewatch.testing import LoopbackJudgeServer, Reply

PACKAGE = Path(scorewatch.__file__).resolve().parent


class PathRecorder:
    """A profile function that records scorewatch calls while `active` is set."""

    def __init__(self) -> None:
        self.active = False
        self.files: Counter[str] = Counter()
        self.edges: Counter[tuple[str, str]] = Counter()
        self._own: dict[str, str | None] = {}

    def _ours(self, filename: str) -> str | None:
        found = self._own.get(filename, "")
        if found == "":
            path = Path(filename)
            found = str(path.relative_to(PACKAGE)) if path.is_relative_to(PACKAGE) else None
            self._own[filename] = found
        return found

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if not self.active or event != "call":
            return
        callee = self._ours(frame.f_code.co_filename)
        if callee is None:
            return
        self.files[callee] += 1
        caller = frame.f_back
        if caller is not None:
            origin = self._ours(caller.f_code.co_filename)
            if origin is not None and origin != callee:
                self.edges[(origin, callee)] += 1


async def scored_call(
    live: LiveScoring, recorder: PathRecorder | None, agent_tracer: Tracer | None = None
) -> None:
    @live.watch(target="support-bot")
    async def answer(question: str) -> str:
        return "Refunds are possible within thirty days of purchase with a receipt."

    if recorder is not None:
        recorder.active = True
    if agent_tracer is None:
        await answer("Can I get a refund within thirty days of purchase?")
    else:
        with agent_tracer.start_as_current_span("agent call"):
            await answer("Can I get a refund within thirty days of purchase?")
    stored = await live.drain(timeout=30.0)
    if recorder is not None:
        recorder.active = False
    if not stored:
        raise SystemExit("the live run did not finish within 30 s")


def judged_scorer(base_url: str) -> Scorer:
    """One prompt step, answered by the litellm judge over HTTP."""
    judge = JudgeConfig(
        model="openai/loopback-judge",
        instructions="You grade support answers.",
        model_options={"api_base": base_url, "api_key": "sk-loopback"},
    )
    return create_scorer(id="helpfulness", description="d", judge=judge).generate_score(
        PromptStep("rate the answer", lambda ctx: f"Rate from 0 to 1: {ctx.run.output}")
    )


async def measure(folder: Path, traced: bool = False, judged: bool = False) -> PathRecorder:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(
        metric_readers=[InMemoryMetricReader()], views=telemetry.metric_views()
    )
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(InMemoryLogRecordExporter()))
    telemetry.instrument(tracer_provider, meter_provider, logger_provider)
    agent_tracer = TracerProvider().get_tracer("agent") if traced else None

    # Started before profiling: its thread serves the judge and is not part of the path.
    judge_server = LoopbackJudgeServer(default=Reply('{"score": 0.8}')).start() if judged else None
    recorder = PathRecorder()
    sys.setprofile(recorder)
    threading.setprofile(recorder)  # threads started from here on (the SQLite writer)
    sink = SqliteSink(folder / "scores.db")
    scorer = (
        create_keyword_coverage_scorer(keywords=["refund", "thirty days", "receipt"])
        if judge_server is None
        else judged_scorer(judge_server.base_url)
    )
    live = LiveScoring(
        scorers={"coverage": LiveScorerEntry(scorer)}, sinks=[sink], drain_on_exit=False
    )
    try:
        await scored_call(live, None, agent_tracer)  # warm-up: imports, threads, instruments
        await scored_call(live, recorder, agent_tracer)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        await live.aclose()
        telemetry.uninstrument()
        if judge_server is not None:
            judge_server.stop()
    if live.stats()["scored"] != 2 or not spans.get_finished_spans():
        raise SystemExit(f"the calls were not scored and traced: {live.stats()}")
    if judge_server is not None and judge_server.request_count != 2:
        raise SystemExit(f"the judge answered {judge_server.request_count} calls, not 2")
    return recorder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="also list files and edges")
    parser.add_argument("--traced", action="store_true", help="call inside an agent's span")
    parser.add_argument("--judged", action="store_true", help="a prompt step over litellm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        recorder = asyncio.run(measure(Path(folder), traced=args.traced, judged=args.judged))
    hops = sum(recorder.edges.values())
    print(f"files={len(recorder.files)} hops={hops} edges={len(recorder.edges)}")
    if args.list:
        for name, calls in sorted(recorder.files.items()):
            print(f"  {calls:5d} calls  {name}")
        for (origin, callee), count in sorted(recorder.edges.items()):
            print(f"  {count:5d} hops   {origin} -> {callee}")


if __name__ == "__main__":
    main()
