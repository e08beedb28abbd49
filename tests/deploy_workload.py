"""A scorewatch process for the dashboard and alert end-to-end tests (run as a subprocess).

It configures telemetry with a Prometheus endpoint on a free loopback port, prints the port, and
then keeps scoring until its stdin closes:

- `relevancy`: an LLM-judged scorer (scripted judge over the real scorer core) scored on live
  traffic for `support-agent`, with retried and failed judge calls and an estimated cost;
  its scores sit around 0.9 until a line `drop` arrives on stdin, then around 0.5;
- `tone`: a model-free scorer on live traffic (with a filter) and in batch experiments;
- `slow`: a live scorer behind a tiny queue, so bursts are dropped when the queue is full;
- `budgeted`: the judged scorer again under a spend budget of a few runs a day, so the budget
  binds at once: its gauges exist, calls are `skipped_budget`, ScorewatchBudgetBinding fires;
- a sink that fails now and then, next to an SQLite sink;
- with a Redis URL and a stream name as further arguments, serve's `RedisIntake` appends every
  tick's traffic for `queued` to that stream and a `StreamWorker` scores it, so the work-queue
  gauges and counters exist: a consumer that read two entries and died makes them be claimed
  again (redeliveries) and an unreadable entry is dead-lettered (`malformed`). The streams are
  deleted on exit.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import threading
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import scorewatch as sw
from scorewatch import telemetry
from scorewatch.core.call import AgentCall
from scorewatch.judge import JudgeProviderError, JudgeReply, JudgeRequest
from scorewatch.live import (
    CallbackSink,
    LiveScorerEntry,
    LiveScoring,
    Sampling,
    ScoreRecord,
    SqliteSink,
)
from scorewatch.server.intake.interface import ScoreItem
from scorewatch.server.intake.redis_queue import RedisIntake
from scorewatch.server.queue.stream import StreamNames, connect, ensure_group
from scorewatch.server.queue.worker import StreamWorker
from scorewatch.testing import ScriptedJudge

SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}},
    "required": ["score"],
}
JITTER = (-0.03, 0.01, 0.03, -0.01, 0.0)


class Level:
    """The score level the scripted judge answers around; stdin `drop` lowers it."""

    def __init__(self) -> None:
        self.value = 0.9


def make_judge(level: Level) -> ScriptedJudge:
    calls = itertools.count(1)
    jitter = itertools.cycle(JITTER)

    def reply(request: JudgeRequest) -> JudgeReply | BaseException:
        call = next(calls)
        if call % 29 == 0:  # a retryable outage: retried, visible as an extra attempt
            return JudgeProviderError("overloaded", code="UNAVAILABLE", retryable=True)
        if call % 31 == 0:  # a hard failure: the execution and the run fail
            return JudgeProviderError("refused", code="BAD_REQUEST")
        usage = sw.judge.JudgeUsage(input_tokens=120, output_tokens=15, total_tokens=135)
        if request.step == "analyze":
            score = min(1.0, max(0.0, level.value + next(jitter)))
            text = json.dumps({"score": round(score, 3)})
        else:
            text = "The answer addresses the question."
        return JudgeReply(text=text, usage=usage, estimated_cost_usd=0.0004)

    return ScriptedJudge(
        reply,
        model_id="gpt-4o-mini",
        provider="openai",
        retry_policy=sw.RetryPolicy(max_retries=1, base_delay=0.0, jitter=False),
    )


def relevancy_scorer(judge: ScriptedJudge) -> sw.Scorer:
    return (
        sw.create_scorer(
            id="relevancy",
            description="Is the answer relevant to the question?",
            judge=sw.JudgeConfig(model=judge, instructions="You grade answers."),
        )
        .analyze(
            sw.PromptStep(
                description="grade the answer",
                create_prompt=lambda ctx: f"Grade: {ctx.run.output}",
                output_schema=SCORE_SCHEMA,
            )
        )
        .generate_score(lambda ctx: ctx.results.analyze_step_result["score"])
        .generate_reason(
            sw.PromptStep(
                description="explain the grade",
                create_prompt=lambda ctx: f"Why {ctx.score}?",
            )
        )
    )


def tone_scorer() -> sw.Scorer:
    return (
        sw.create_scorer(id="tone", description="Polite answers score 1.")
        .preprocess(lambda ctx: {"polite": "please" in str(ctx.run.output)})
        .generate_score(lambda ctx: 1.0 if ctx.results.preprocess_step_result["polite"] else 0.6)
    )


async def slow_score(ctx: sw.StepContext) -> float:
    await asyncio.sleep(0.2)
    return 0.8


def slow_scorer() -> sw.Scorer:
    return sw.create_scorer(id="slow", description="Takes its time.").generate_score(slow_score)


def flaky_sink() -> CallbackSink:
    results = itertools.count(1)

    def write(result: ScoreRecord) -> None:
        if next(results) % 7 == 0:
            raise OSError("disk full")

    return CallbackSink(write, name="flaky-callback")


def queued_scorer() -> sw.Scorer:
    return sw.create_scorer(id="queued", description="Scored by a worker.").generate_score(
        lambda ctx: min(1.0, len(str(ctx.run.output)) / 20)
    )


class WorkQueue:
    """serve's intake and one worker on a real Redis stream, in this process."""

    def __init__(self, url: str, stream: str, data_dir: Path) -> None:
        self.names = StreamNames(stream, f"{stream}-workers", f"{stream}:dead")
        self.intake = RedisIntake(
            {"queued": LiveScorerEntry(queued_scorer(), sampling=Sampling.ratio(1.0))},
            client=connect(url),
            names=self.names,
            max_backlog=10_000,
            stats_interval=0.5,
        )
        self.client = connect(url)
        self.worker = StreamWorker(
            {"queued": queued_scorer()},
            client=self.client,
            names=self.names,
            sinks=[SqliteSink(str(data_dir / "queued.db"))],
            concurrency=4,
            visibility_timeout=1.0,
            max_deliveries=3,
            claim_interval=0.25,
            stats_interval=0.5,
        )
        self._running: asyncio.Task[dict[str, int]] | None = None

    async def submit(self, tick: int) -> None:
        item = ScoreItem(
            AgentCall(input=f"queued {tick}", output=f"answer {tick}", target="support-agent")
        )
        await self.intake.admit([item])

    async def start(self) -> None:
        await ensure_group(self.client, self.names)
        await self.submit(-2)
        await self.submit(-1)
        # A consumer that takes both entries and dies: after visibility_timeout the worker
        # claims them again.
        await self.client.xreadgroup(
            self.names.group, "e2e-dead-consumer", {self.names.stream: ">"}, count=2
        )
        await self.client.xadd(self.names.stream, {"v": "not an entry"})  # dead-lettered
        self._running = asyncio.get_running_loop().create_task(self.worker.run(drain_timeout=5))

    async def aclose(self) -> None:
        self.worker.stop()
        if self._running is not None:
            await self._running
        await self.intake.shutdown(1.0)
        await self.intake.aclose()
        await self.client.delete(self.names.stream, self.names.dead_letters)
        await self.client.aclose()


async def traffic(
    live: LiveScoring,
    burst: LiveScoring,
    budgeted: LiveScoring,
    queue: WorkQueue | None,
    stop: threading.Event,
) -> None:
    for tick in itertools.count():
        if stop.is_set():
            return
        if queue is not None:
            await queue.submit(tick)
        for index in range(4):
            live.submit(
                input=f"question {tick}-{index}",
                output=f"answer {tick}-{index}" + (" please" if index % 2 else ""),
                target="support-agent",
            )
        live.submit(input="lookup", output="internal", target="internal-tool")  # filtered
        budgeted.submit(input=f"question {tick}", output=f"answer {tick}", target="support-agent")
        if tick % 10 == 0:
            for index in range(6):  # a burst the 2-slot queue cannot hold
                burst.submit(input=f"burst {index}", output="x", target="support-agent")
            data = [{"input": f"q{n}", "output": f"a{n} please"} for n in range(3)]
            await sw.run_evals(data=data, scorers=[tone_scorer()])
        await asyncio.sleep(0.1)


def read_commands(level: Level, stop: threading.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "drop":
            level.value = 0.5
            print("dropped", flush=True)
    stop.set()


async def main(data_dir: Path, redis_url: str | None, stream: str | None) -> None:
    handle = telemetry.configure(
        service_name="scorewatch-e2e", prometheus="127.0.0.1:0", otlp=False
    )
    level = Level()
    judge = make_judge(level)
    live = LiveScoring(
        {
            "relevancy": LiveScorerEntry(relevancy_scorer(judge), sampling=Sampling.ratio(0.8)),
            "tone": LiveScorerEntry(
                tone_scorer(),
                sampling=Sampling.ratio(1.0),
                filter=lambda call: call.target != "internal-tool",
            ),
        },
        max_concurrency=8,
        max_queue=1000,
        sinks=[SqliteSink(str(data_dir / "scores.db")), flaky_sink()],
        drain_on_exit=False,
    )
    burst = LiveScoring(
        {"slow": LiveScorerEntry(slow_scorer(), sampling=Sampling.ratio(1.0))},
        max_concurrency=1,
        max_queue=2,
        drain_on_exit=False,
    )
    budgeted = LiveScoring(
        {"budgeted": relevancy_scorer(judge).copy(id="budgeted")},
        budget_usd_per_day=0.002,  # about five judged runs a day
        drain_on_exit=False,
    )
    queue = None
    if redis_url is not None and stream is not None:
        queue = WorkQueue(redis_url, stream, data_dir)
        await queue.start()
    stop = threading.Event()
    threading.Thread(target=read_commands, args=(level, stop), daemon=True).start()
    print(handle.prometheus_port, flush=True)
    try:
        await traffic(live, burst, budgeted, queue, stop)
    finally:
        if queue is not None:
            await queue.aclose()
    await live.aclose(timeout=5)
    await burst.aclose(timeout=5)
    await budgeted.aclose(timeout=5)
    handle.shutdown()


if __name__ == "__main__":
    queue_arguments = sys.argv[2:4] if len(sys.argv) >= 4 else [None, None]
    asyncio.run(main(Path(sys.argv[1]), *queue_arguments))
