"""Where a judge call's CPU goes, litellm path vs fast path: a profile grouped by package.

    .venv/bin/python benchmarks/profile_judge.py [--calls 1000] [--transport litellm|auto]

Runs `LiteLLMJudge.complete` `--calls` times (32 at a time, after a warm-up) against the
loopback judge in a process of its own, under cProfile, and prints a Markdown table: the share of
the profiled self-time per package (litellm, openai, httpx, aiohttp, asyncio, scorewatch, ...)
and the ten most expensive functions. cProfile inflates every function call's cost, so read
shares, not absolute times; `bench_judge_call.py` gives the unprofiled CPU per call.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import pstats
from typing import Any

import _common

from scorewatch.judge import JudgeRequest, LiteLLMJudge

_PACKAGES = (
    "litellm",
    "openai",
    "httpx",
    "httpcore",
    "aiohttp",
    "pydantic",
    "scorewatch",
    "asyncio",
    "json",
)


def _package(filename: str) -> str:
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins"
    parts = filename.replace("\\", "/").split("/")
    for name in _PACKAGES:
        if name in parts:
            return name
    return "other (stdlib, selectors, ssl, ...)"


async def _calls(judge: LiteLLMJudge, total: int) -> None:
    request = JudgeRequest(prompt="Rate it.", instructions="Judge.", step="generate_reason")
    gate = asyncio.Semaphore(32)

    async def one() -> Any:
        async with gate:
            return await judge.complete(request)

    await asyncio.gather(*(one() for _ in range(total)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--transport", choices=("auto", "litellm"), default="auto")
    args = parser.parse_args()
    judge_process, port = _common.start_judge(0.0)
    try:
        judge = LiteLLMJudge(
            "openai/loopback",
            api_base=f"http://127.0.0.1:{port}/v1",
            api_key="sk-bench",
            transport=args.transport,
        )
        profiler = cProfile.Profile()

        async def run() -> None:
            await _calls(judge, 200)  # warm-up: imports, connections, price lookup
            profiler.enable()
            await _calls(judge, args.calls)
            profiler.disable()

        asyncio.run(run())
    finally:
        _common.stop_judge(judge_process)
    stats = pstats.Stats(profiler)
    raw: Any = stats.stats  # type: ignore[attr-defined]
    shares: collections.Counter[str] = collections.Counter()
    functions: list[tuple[float, str]] = []
    for (filename, line, name), (_, _, self_time, _, _) in raw.items():
        shares[_package(filename)] += self_time
        functions.append((self_time, f"{_package(filename)}: {name} ({line})"))
    total = sum(shares.values()) or 1.0
    print(f"### Judge call profile, transport={judge.transport} ({args.calls} calls)\n")
    print(f"Profiled self-time {total / args.calls * 1000:.2f} ms per call (cProfile-inflated).\n")
    print("| package | share of self-time |\n|---|---|")
    for package, seconds in shares.most_common():
        if seconds / total >= 0.005:
            print(f"| {package} | {seconds / total:.0%} |")
    print("\n| top functions by self-time | share |\n|---|---|")
    for seconds, label in sorted(functions, reverse=True)[:10]:
        print(f"| {label} | {seconds / total:.1%} |")


if __name__ == "__main__":
    main()
