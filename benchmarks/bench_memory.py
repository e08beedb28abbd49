"""RSS growth over 100,000 live submissions with the judge down and max_queue=1,000 (issue #6).

    .venv/bin/python benchmarks/bench_memory.py [--submissions 100000] [-o result.json]

The judge is a `LiteLLMJudge` pointed at a loopback port nothing listens on (connection refused,
its default retries included), so accepted runs fail slowly, the queue fills, and further calls
are dropped and counted. Submissions go in batches of 100 with a yield to the event loop between
batches (as an agent serving requests would), and RSS is sampled every 5,000 submissions.
Reported: RSS growth from the warmed-up start, growth after the queue filled, the live stats.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import socket
from typing import Any

import _common
from _common import rss_bytes

import scorewatch as sw
from scorewatch.live import LiveScoring


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def judged_scorer(port: int) -> sw.Scorer:
    judge = sw.LiteLLMJudge(
        "openai/loopback", api_base=f"http://127.0.0.1:{port}/v1", api_key="sk-bench"
    )
    return sw.create_scorer(
        id="quality-judged",
        description="benchmark",
        judge=sw.JudgeConfig(model=judge, instructions="You are a judge."),
    ).generate_score(sw.PromptStep("score", lambda ctx: f"Rate this answer: {ctx.run.output}"))


async def submit_all(total: int, max_queue: int) -> dict[str, Any]:
    live = LiveScoring(
        {"judged": judged_scorer(closed_port())},
        max_queue=max_queue,
        max_concurrency=32,
        drain_on_exit=False,
    )
    output = "Machine learning is a subset of artificial intelligence that learns from data."
    # Warm-up: imports, litellm's client, the first failures, so the baseline is a steady state.
    for i in range(500):
        live.submit(input=f"question {i}", output=output, target="agent")
    await asyncio.sleep(1.0)
    gc.collect()
    baseline = rss_bytes()
    samples: list[tuple[int, int]] = [(0, baseline)]
    filled_at: int | None = None
    filled_rss = baseline
    for i in range(total):
        live.submit(input=f"question {i}", output=output, target="agent")
        if i % 100 == 99:
            await asyncio.sleep(0)
        if filled_at is None and live.stats()["dropped_queue_full"] > 0:
            filled_at = i + 1
        if (i + 1) % 5_000 == 0:
            rss = rss_bytes()
            samples.append((i + 1, rss))
            if filled_at is not None and filled_rss == baseline:
                filled_rss = rss
    stats = live.stats()
    await live.aclose(timeout=0.5)
    peak = max(rss for _, rss in samples)
    final = samples[-1][1]
    return {
        "submissions": total,
        "max_queue": max_queue,
        "baseline_mb": baseline / 2**20,
        "growth_mb": (peak - baseline) / 2**20,
        "growth_after_fill_mb": (final - filled_rss) / 2**20,
        "queue_filled_after": filled_at,
        "samples_mb": [(n, round(rss / 2**20, 2)) for n, rss in samples],
        "stats": stats,
        "accounted": stats["sampled"] + stats["dropped_queue_full"] + stats["dropped_shutdown"]
        == total + 500,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=100_000)
    parser.add_argument("--max-queue", type=int, default=1_000)
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    _common.emit(asyncio.run(submit_all(args.submissions, args.max_queue)), args.output)


if __name__ == "__main__":
    main()
