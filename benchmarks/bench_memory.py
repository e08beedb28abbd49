"""RSS growth over 100,000 live submissions with the judge down and max_queue=1,000 (issue #6).

    .venv/bin/python benchmarks/bench_memory.py [--submissions 100000] [-o result.json]

The judge is a `LiteLLMJudge` pointed at a loopback port nothing listens on (connection refused,
its default retries included), so accepted runs fail slowly, the queue fills, and further calls
are dropped and counted. Submissions go in batches of 100 with a yield to the event loop between
batches (as an agent serving requests would), and RSS is sampled every 5,000 submissions.

The baseline is taken once the process is warm: the queue full and the first `max_concurrency`
runs failed, so litellm's failure path (modules it imports on first use, its clients) is loaded.
Reported: RSS growth from that baseline (peak), growth over the second half of the submissions
(flat means no per-submission growth), the samples, the live stats.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import socket
import time
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
    warm_submissions = 0
    deadline = time.monotonic() + 120
    while live.stats()["failed"] < 32 and time.monotonic() < deadline:
        for _ in range(100):
            live.submit(input=f"warm-up {warm_submissions}", output=output, target="agent")
            warm_submissions += 1
        await asyncio.sleep(0.05)
    gc.collect()
    baseline = rss_bytes()
    samples: list[tuple[int, int]] = [(0, baseline)]
    warm_stats = live.stats()
    for i in range(total):
        live.submit(input=f"question {i}", output=output, target="agent")
        if i % 100 == 99:
            await asyncio.sleep(0)
        if (i + 1) % 5_000 == 0:
            samples.append((i + 1, rss_bytes()))
    stats = live.stats()
    await live.aclose(timeout=0.5)
    peak = max(rss for _, rss in samples)
    half = min(samples, key=lambda sample: abs(sample[0] - total // 2))
    return {
        "submissions": total,
        "max_queue": max_queue,
        "baseline_mb": baseline / 2**20,
        "growth_mb": (peak - baseline) / 2**20,
        "second_half_growth_mb": (samples[-1][1] - half[1]) / 2**20,
        "warm_up": {"submissions": warm_submissions, "stats": warm_stats},
        "samples_mb": [(n, round(rss / 2**20, 2)) for n, rss in samples],
        "stats": stats,
        "accounted": stats["sampled"] + stats["dropped_queue_full"] + stats["dropped_shutdown"]
        == total + warm_submissions,
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
