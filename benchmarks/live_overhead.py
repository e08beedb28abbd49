"""What `LiveScoring.watch` adds to an agent call, and what a slow or failing judge adds.

    .venv/bin/python benchmarks/live_overhead.py [--calls 20000]

Times an async agent function (returns after one `await asyncio.sleep(0)`) called in sequence,
bare and watched under several judges, and a sync function called from a thread without a loop.
Prints one JSON object: median per-call time in microseconds per variant (median of 10 batches),
the overhead over the bare call, and the final live stats (every call accounted for).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import scorewatch as sw
from scorewatch.judge import JudgeProviderError, JudgeRequest
from scorewatch.live import LiveScorerEntry, LiveScoring, Sampling
from scorewatch.testing import ScriptedJudge


def judged(judge: sw.JudgeModel) -> sw.Scorer:
    return sw.create_scorer(
        id="quality",
        description="benchmark",
        judge=sw.JudgeConfig(model=judge, instructions="judge"),
    ).generate_score(sw.PromptStep("score", lambda ctx: f"rate {ctx.run.output}"))


async def hang(request: JudgeRequest) -> str:
    await asyncio.Event().wait()
    return '{"score": 1}'


def fail(request: JudgeRequest) -> Any:
    return JudgeProviderError("outage", status_code=503)


async def per_call_us(call: Callable[[str], Awaitable[str]], calls: int) -> float:
    batches: list[float] = []
    batch = max(1, calls // 10)
    for _ in range(10):
        started = time.perf_counter()
        for i in range(batch):
            await call(str(i))
        batches.append((time.perf_counter() - started) / batch * 1e6)
    return statistics.median(batches)


async def agent(question: str) -> str:
    await asyncio.sleep(0)
    return "answer to " + question


def variants() -> dict[str, dict[str, LiveScorerEntry]]:
    answer = ScriptedJudge(lambda request: '{"score": 0.5}')
    return {
        "watched, judge answers": {"q": LiveScorerEntry(judged(answer))},
        "watched, judge hangs": {"q": LiveScorerEntry(judged(ScriptedJudge(hang)))},
        "watched, judge fails": {"q": LiveScorerEntry(judged(ScriptedJudge(fail)))},
        "watched, 10% sampled": {
            "q": LiveScorerEntry(judged(answer), sampling=Sampling.ratio(0.1))
        },
        "watched, nothing sampled": {
            "q": LiveScorerEntry(judged(answer), sampling=Sampling.ratio(0.0))
        },
    }


async def main(calls: int) -> dict[str, Any]:
    bare = await per_call_us(agent, calls)
    report: dict[str, Any] = {"calls": calls, "bare_us": round(bare, 2), "variants": {}}
    for name, scorers in variants().items():
        live = LiveScoring(scorers, max_queue=1_000, max_concurrency=32, drain_on_exit=False)
        watched = live.watch(target="bench")(agent)
        took = await per_call_us(watched, calls)
        await live.aclose(timeout=0.5)
        report["variants"][name] = {
            "per_call_us": round(took, 2),
            "overhead_us": round(took - bare, 2),
            "stats": live.stats(),
        }
    return report


def sync_from_thread(calls: int) -> dict[str, Any]:
    def plain(question: str) -> str:
        return "answer to " + question

    live = LiveScoring(
        {"q": judged(ScriptedJudge(lambda request: '{"score": 0.5}'))},
        max_queue=1_000,
        drain_on_exit=False,
    )
    watched = live.watch(target="bench")(plain)
    timings = {}
    for name, fn in (("bare", plain), ("watched", watched)):
        started = time.perf_counter()
        for i in range(calls):
            fn(str(i))
        timings[name] = (time.perf_counter() - started) / calls * 1e6
    live.close(timeout=30)
    return {
        "bare_us": round(timings["bare"], 2),
        "watched_us": round(timings["watched"], 2),
        "stats": live.stats(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    result = asyncio.run(main(args.calls))
    result["sync_no_loop"] = sync_from_thread(args.calls)
    print(json.dumps(result, indent=2))
