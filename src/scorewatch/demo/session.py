"""One run of `scorewatch demo`: a simulated summarizer agent, scored live, watched in the terminal.

Everything on the scoring path is the real thing: `LiveScoring` with deterministic sampling on
the agent (`watch`), the summarization scorer calling its judge over HTTP (the fast path), two
model-free scorers, the telemetry add-on serving `/metrics`, and an SQLite sink. Only the agent
and — unless `--model` names a real one — the judge are simulated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..core.events import OBSERVERS
from ..judge.prices import import_litellm
from ..live import CallbackSink, LiveScorerEntry, LiveScoring, Sampling, ScoreRecord, SqliteSink
from ..scorers import (
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_summarization_scorer,
)
from .agent import SimulatedSummarizer, request_stream
from .dataset import DemoDataset, load_demo_dataset
from .local_prometheus import DemoPrometheus
from .simulated_judge import SimulatedJudge
from .stats import DemoStats
from .view import LiveView, ViewState, render_summary

if TYPE_CHECKING:
    from ..telemetry import TelemetryHandle

__all__ = ["AGENT_TARGET", "DemoOptions", "run_demo"]

AGENT_TARGET = "summarizer-agent"
DEFAULT_DURATION_S = 45.0
DEFAULT_METRICS_PORT = 9464
DEFAULT_DURATION_WITH_PROMETHEUS_S = 60.0


@dataclass(frozen=True, slots=True)
class DemoOptions:
    model: str | None = None
    duration_s: float = DEFAULT_DURATION_S
    rate: float = 4.0
    port: int | None = None
    """Port of /metrics on 127.0.0.1 (0: any free one); None: 9464, or a free one if taken."""
    prometheus: bool = False
    db_path: Path | None = None
    sample_rate: float = 0.5
    degrade_at: float = 0.4
    """When the agent degrades, as a share of the duration."""
    seed: int | None = None
    drain_timeout_s: float = 20.0


async def run_demo(options: DemoOptions, out: IO[str] | None = None) -> int:
    """Run the demo until `duration_s` passes or Ctrl-C; returns the exit code."""
    stream = out if out is not None else sys.stdout
    tty = stream.isatty()
    view = LiveView(stream, tty=tty)
    dataset = load_demo_dataset()
    say = view.say

    say("scorewatch demo: a simulated summarizer agent, scored live")
    say("loading litellm (a few seconds the first time)...")
    await asyncio.to_thread(import_litellm)

    judge: SimulatedJudge | None = None
    if options.model is None:
        judge = SimulatedJudge(dataset, seed=options.seed).start()
        model: str = judge.model_id
        model_options: dict[str, Any] | None = judge.model_options
        judge_label = "simulated"
        say(
            f"judge: SIMULATED - a loopback OpenAI-compatible server at {judge.base_url} replays "
            "the demo dataset's annotations as verdicts (no API key, no network). Calls still go "
            "over HTTP as a real judge's do, so records, tokens, latency and cost are measured. "
            "Use --model MODEL (e.g. openai/gpt-4o-mini, with its API key in the environment) "
            "for a real judge."
        )
    else:
        model, model_options = options.model, None
        judge_label = options.model
        say(
            f"judge: {options.model} (a real model: each scored request makes 3 "
            "judge calls and costs money)"
        )

    port = DEFAULT_METRICS_PORT if options.port is None else options.port
    try:
        try:
            handle = _configure_telemetry(port)
        except OSError:
            if options.port is not None:
                raise
            # The default port is taken (another exporter?): any free port will do.
            say(f"127.0.0.1:{port} is taken; serving /metrics on a free port instead")
            handle = _configure_telemetry(0)
    except Exception as error:
        say(f"error: cannot serve /metrics on 127.0.0.1:{port} ({error}); try --port 0")
        if judge is not None:
            judge.stop()
        return 2
    metrics_url = handle.prometheus_url or "-"
    say(f"metrics: {metrics_url}")

    db_path = options.db_path or Path(tempfile.mkdtemp(prefix="scorewatch-demo-")) / "scores.db"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    say(f"results: {db_path} (SQLite, table mastra_scorers)")
    # Warnings (a failing judge: one per failed run) go to a file, not through the live view.
    log_path = db_path.parent / "scorewatch-demo.log"
    log_handler = logging.FileHandler(log_path, encoding="utf-8")
    log_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    package_logger = logging.getLogger("scorewatch")
    package_logger.addHandler(log_handler)
    say(f"log: {log_path}")

    prometheus = None
    if options.prometheus:
        prometheus = _start_prometheus(handle.prometheus_port, say)

    summarization = create_summarization_scorer(model, model_options=model_options)
    completeness = create_completeness_scorer()
    similarity = create_content_similarity_scorer()
    scorers = [summarization, completeness, similarity]
    stats = DemoStats([scorer.id for scorer in scorers], label_of=_quality_label(dataset))
    OBSERVERS.add(stats)
    sampling = Sampling.ratio(options.sample_rate)
    live = LiveScoring(
        {scorer.id: LiveScorerEntry(scorer, sampling=sampling) for scorer in scorers},
        max_concurrency=32,
        max_queue=2_000,
        sinks=[SqliteSink(db_path), CallbackSink(stats.record_result, name="demo-view")],
        drain_on_exit=False,
    )
    agent = SimulatedSummarizer(dataset, seed=options.seed)
    summarize = live.watch(target=AGENT_TARGET)(agent.summarize)
    say(
        f"agent: {AGENT_TARGET}, {options.rate:g} requests/s for {options.duration_s:g}s; "
        f"{options.sample_rate:.0%} of requests sampled for scoring; quality degrades at "
        f"t={options.duration_s * options.degrade_at:.0f}s. Ctrl-C ends early."
    )

    stop = asyncio.Event()
    requests = 0
    in_flight: set[asyncio.Task[Any]] = set()
    started = stats.elapsed()

    def state() -> ViewState:
        return ViewState(
            elapsed_s=stats.elapsed() - started,
            duration_s=options.duration_s,
            requests=requests,
            phase=stats.phase,
            live=live.stats(),
            series=stats.series(),
            judge=stats.judge(),
            judge_label=judge_label,
            last_error=stats.last_error,
        )

    async def refresh() -> None:
        period = 0.5 if tty else (1.0 if options.duration_s <= 20 else 3.0)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=period)
            if not stop.is_set():
                view.show(state())

    async def degrade() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=options.duration_s * options.degrade_at)
        if not stop.is_set():
            agent.degraded = True
            stats.phase = "degraded"
            say(
                f"[{stats.elapsed() - started:5.1f}s] the agent's quality just degraded "
                "(hallucinated and incomplete summaries from now on)"
            )

    async def deadline() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=options.duration_s)
        stop.set()

    async def serve_one(text: str) -> None:
        with contextlib.suppress(Exception):  # a failing agent call is the agent's business
            await summarize(text)

    loop = asyncio.get_running_loop()
    interrupted = _install_interrupt(loop, stop)
    helpers = [asyncio.create_task(coro) for coro in (refresh(), degrade(), deadline())]
    if prometheus is not None:
        helpers.append(
            asyncio.create_task(
                prometheus.watch_alerts(
                    stop,
                    lambda alert: say(
                        f"[{stats.elapsed() - started:5.1f}s] Prometheus alert firing: {alert}"
                    ),
                )
            )
        )
    try:
        async for document in request_stream(
            dataset, rate=options.rate, seed=options.seed, stop=stop
        ):
            requests += 1
            task = asyncio.create_task(serve_one(document.text))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
    finally:
        stop.set()
        _remove_interrupt(loop)
        await asyncio.gather(*helpers, return_exceptions=True)
        if in_flight:
            await asyncio.gather(*in_flight, return_exceptions=True)
        if interrupted.is_set():
            say("interrupted: finishing the runs already accepted...")
        pending = live.stats()
        if pending["queued"] or pending["in_flight"]:
            say(
                f"draining {pending['queued'] + pending['in_flight']} sampled run(s) still "
                f"queued or in flight (up to {options.drain_timeout_s:.0f}s)..."
            )
        await live.aclose(timeout=options.drain_timeout_s)
        OBSERVERS.remove(stats)
        final = state()
        alerts: list[str] | None = None
        if prometheus is not None:
            await asyncio.to_thread(prometheus.poll_alerts)
            alerts = prometheus.fired_summary()
        for line in render_summary(
            final,
            served={quality.value: count for quality, count in agent.served.items()},
            rows=_count_rows(db_path),
            db_path=str(db_path),
            alerts=alerts,
        ):
            say(line)
        if prometheus is not None:
            say(f"Prometheus was at {prometheus.url} (stopped now)")
            await asyncio.to_thread(prometheus.stop)
        handle.shutdown()
        if judge is not None:
            judge.stop()
        package_logger.removeHandler(log_handler)
        log_handler.close()
    return 0


def _configure_telemetry(port: int) -> TelemetryHandle:
    from .. import telemetry

    return telemetry.configure(
        service_name="scorewatch-demo", prometheus=f"127.0.0.1:{port}", otlp=False
    )


def _start_prometheus(
    metrics_port: int | None, say: Callable[[str], None]
) -> DemoPrometheus | None:
    if metrics_port is None:
        return None
    prometheus = DemoPrometheus.locate(f"127.0.0.1:{metrics_port}")
    if prometheus is None:
        say(
            "prometheus: the `prometheus` binary is not installed, so --prometheus is skipped "
            "(Debian/Ubuntu: apt-get install prometheus)"
        )
        return None
    try:
        prometheus.start()
    except RuntimeError as error:
        say(f"prometheus: could not start ({error}); continuing without it")
        return None
    rules = prometheus.rules
    say(
        f"prometheus: {prometheus.url} (scrapes every 1s; "
        + (
            f"short-window rules from {rules})"
            if rules is not None
            else "no rules: the package's short-window rules were not found)"
        )
    )
    say(
        f"  alerts: {prometheus.url}/alerts · score mean: {prometheus.url}/graph?g0.expr="
        "scorewatch%3Aevaluation_score%3Amean_short"
    )
    return prometheus


def _quality_label(dataset: DemoDataset) -> Callable[[ScoreRecord], str | None]:
    def label(result: ScoreRecord) -> str | None:
        output = result.call.output
        found = dataset.find_summary(output) if isinstance(output, str) else None
        return None if found is None else found[1].quality.value

    return label


def _count_rows(path: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            row = connection.execute("select count(*) from mastra_scorers").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


def _install_interrupt(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> asyncio.Event:
    """First Ctrl-C: stop taking requests and finish cleanly. A second one: the default."""
    interrupted = asyncio.Event()

    def on_interrupt() -> None:
        interrupted.set()
        stop.set()
        _remove_interrupt(loop)

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    return interrupted


def _remove_interrupt(loop: asyncio.AbstractEventLoop) -> None:
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.remove_signal_handler(signal.SIGINT)
