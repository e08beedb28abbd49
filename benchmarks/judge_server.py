"""Throughput of the loopback judge server, alone and behind the real litellm client.

    .venv/bin/python benchmarks/judge_server.py [--requests 4000] [--concurrency 64]

Prints one JSON object: requests per second and per-request latency percentiles for plain
aiohttp clients (the server's own cost) and for `LiteLLMJudge.complete` (litellm's cost on top).
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

import aiohttp

from scorewatch.judge import JudgeRequest, LiteLLMJudge
from scorewatch.testing import LoopbackJudgeServer, Reply

BODY = json.dumps({"model": "loopback", "messages": [{"role": "user", "content": "hi"}]})


async def measure(
    total: int, concurrency: int, call: Callable[[], Awaitable[None]]
) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one() -> None:
        async with gate:
            started = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    elapsed = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "requests": total,
        "concurrency": concurrency,
        "seconds": round(elapsed, 3),
        "requests_per_second": round(total / elapsed, 1),
        "p50_ms": round(cuts[49] * 1000, 2),
        "p99_ms": round(cuts[98] * 1000, 2),
    }


async def main(total: int, concurrency: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with LoopbackJudgeServer(Reply('{"score": 1}'), record_requests=False) as server:
        url = f"{server.base_url}/chat/completions"
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def plain() -> None:
                headers = {"Content-Type": "application/json"}
                async with session.post(url, data=BODY, headers=headers) as response:
                    await response.read()

            results["aiohttp_clients"] = await measure(total, concurrency, plain)

        judge = LiteLLMJudge("openai/loopback", api_base=server.base_url, api_key="sk-bench")
        request = JudgeRequest(
            prompt="Score it.", instructions="Judge.", step="generate_score", schema={}
        )
        await judge.complete(request)  # warm up: import litellm, open the client

        async def judged() -> None:
            await judge.complete(request)

        results["litellm_judge"] = await measure(total // 4, concurrency, judged)
        results["server_request_count"] = server.request_count
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=64)
    arguments = parser.parse_args()
    print(json.dumps(asyncio.run(main(arguments.requests, arguments.concurrency)), indent=2))
