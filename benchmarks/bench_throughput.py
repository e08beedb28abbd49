"""End-to-end throughput: summarization evaluations per second over HTTP (issues #4, #20).

    .venv/bin/python benchmarks/bench_throughput.py [--evaluations 600] [--rounds 3]
        [--concurrency 64] [--processes 1] [--latency 0.05] [--transport auto|litellm]
        [-o result.json]

The judge is the loopback server in a separate process (`_judge_process.py`), answering every
call after `--latency` seconds; the client runs the real summarization scorer over the real
`LiteLLMJudge` (three HTTP calls per evaluation). Each round runs `--evaluations` evaluations,
`--concurrency` at a time, after a warm-up round. Reported: evaluations/s per round, judge HTTP
calls/s, and judge calls per second of the client's CPU time (calls/s per core).

One event loop uses one core. `--processes N` splits the evaluations and the concurrency over N
client processes (each with its own loop), started together after their warm-up; a round's
figure is the sum of the processes' rates.

The judge server's own CPU over the measured rounds is read from /proc and reported next to
the clients' (`server_cpu_s`, `machine_cores_used`): the machine's cores are shared by both.
`--transport` picks the judge's client (`auto`: the fast path here; `litellm`: before it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import _common
from summarization_prompt_size import SUMMARY, source_of

from scorewatch.judge import LiteLLMJudge
from scorewatch.scorers import create_summarization_scorer


async def run_round(scorer: Any, source: str, total: int, concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    failures = 0

    async def one() -> None:
        nonlocal failures
        async with gate:
            try:
                await scorer.run(input=source, output=SUMMARY)
            except Exception:
                failures += 1

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    calls = 3 * (total - failures)
    return {
        "evaluations": total,
        "failures": failures,
        "seconds": wall,
        "evaluations_per_s": (total - failures) / wall,
        "judge_calls_per_s": calls / wall,
        "client_cpu_s": cpu,
        "judge_calls_per_cpu_s": calls / cpu if cpu else 0.0,
    }


async def measure(args: argparse.Namespace, port: int) -> list[dict[str, Any]]:
    judge = LiteLLMJudge(
        "openai/loopback",
        api_base=f"http://127.0.0.1:{port}/v1",
        api_key="sk-bench",
        transport=args.transport,
    )
    scorer = create_summarization_scorer(judge)
    source = source_of(400)
    await run_round(scorer, source, args.concurrency, args.concurrency)  # warm-up
    if args.child:
        print("READY", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # wait for the parent's go
    return [
        await run_round(scorer, source, args.evaluations, args.concurrency)
        for _ in range(args.rounds)
    ]


def in_processes(args: argparse.Namespace, port: int) -> list[dict[str, Any]]:
    """Run the rounds in `args.processes` child processes; sum their rates round by round."""
    share = [
        "--evaluations",
        str(args.evaluations // args.processes),
        "--concurrency",
        str(args.concurrency // args.processes),
        "--rounds",
        str(args.rounds),
        "--transport",
        args.transport,
    ]
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", str(port), *share],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(args.processes)
    ]
    for child in children:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "READY":
            raise RuntimeError("a client process failed to warm up")
    outputs = [child.communicate(input="go\n", timeout=1800)[0] for child in children]
    per_child = [json.loads(out) for out in outputs]
    rounds: list[dict[str, Any]] = []
    for number in range(args.rounds):
        parts = [child[number] for child in per_child]
        total = sum(part["evaluations"] for part in parts)
        failures = sum(part["failures"] for part in parts)
        cpu = sum(part["client_cpu_s"] for part in parts)
        calls = 3 * (total - failures)
        rounds.append(
            {
                "evaluations": total,
                "failures": failures,
                "seconds": max(part["seconds"] for part in parts),
                "evaluations_per_s": sum(part["evaluations_per_s"] for part in parts),
                "judge_calls_per_s": sum(part["judge_calls_per_s"] for part in parts),
                "client_cpu_s": cpu,
                "judge_calls_per_cpu_s": calls / cpu if cpu else 0.0,
            }
        )
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--transport", choices=("auto", "litellm"), default="auto")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    if args.child:  # one client process of `--processes`: rounds as JSON on stdout
        print(json.dumps(asyncio.run(measure(args, args.child))), flush=True)
        return
    process, port = _common.start_judge(args.latency)
    try:
        server_before = _common.process_cpu_seconds(process.pid)
        if args.processes > 1:
            rounds = in_processes(args, port)
        else:
            rounds = asyncio.run(measure(args, port))
        # Includes the clients' warm-up round (one round of `--concurrency` evaluations).
        server_cpu = _common.process_cpu_seconds(process.pid) - server_before
    finally:
        served = _common.stop_judge(process)
    wall = sum(r["seconds"] for r in rounds)
    _common.emit(
        {
            "processes": args.processes,
            "transport": args.transport,
            "server_cpu_s": server_cpu,
            "client_cpu_s": sum(r["client_cpu_s"] for r in rounds),
            "machine_cores_used": (server_cpu + sum(r["client_cpu_s"] for r in rounds)) / wall,
            "concurrency": args.concurrency,
            "latency_s": args.latency,
            "rounds": rounds,
            "server_requests": served,
            "evaluations_per_s": _common.summary([r["evaluations_per_s"] for r in rounds]),
            "judge_calls_per_s": _common.summary([r["judge_calls_per_s"] for r in rounds]),
            "judge_calls_per_cpu_s": _common.summary([r["judge_calls_per_cpu_s"] for r in rounds]),
            "failures": sum(r["failures"] for r in rounds),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
