"""CPU per judge call: litellm.acompletion vs scorewatch's fast path vs a raw aiohttp POST.

    .venv/bin/python benchmarks/bench_judge_call.py [--calls 2000] [--rounds 5]
        [--concurrency 32] [-o result.json]

One loopback judge server runs in a process of its own (`_judge_process.py`, answering at once);
each client runs in a fresh process of its own, so no client's background threads (litellm's
logging worker) are counted against another. Per client: a warm-up of `--calls` calls, then
`--rounds` rounds of `--calls` calls, `--concurrency` at a time, each round timed by the whole
client process's CPU (`time.process_time`: every thread, user + system). The server's CPU per
request is read from /proc over the same rounds. Same request, same answer, same machine:

- `litellm.acompletion`: what a judge call cost before the fast path, without scorewatch around it
- `litellm-judge`: `LiteLLMJudge(transport="litellm")` (litellm plus scorewatch's own reply work)
- `fast-path`: `LiteLLMJudge` with the default `transport="auto"` (here `openai_http`)
- `raw-aiohttp`: one pooled aiohttp session POSTing the same body and parsing the JSON (the floor)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import _common

CLIENTS = ("litellm.acompletion", "litellm-judge", "fast-path", "raw-aiohttp")
MODEL = "openai/loopback"
SYSTEM = "You are a careful judge."
PROMPT = "Rate this answer from 0 to 1: the summary states every fact of the source."


_closing: list[Callable[[], Awaitable[None]]] = []


async def _client(name: str, base: str) -> Callable[[], Awaitable[Any]]:
    from scorewatch.judge import JudgeRequest, LiteLLMJudge

    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    if name == "litellm.acompletion":
        from scorewatch.judge.prices import import_litellm

        litellm = import_litellm()

        async def call() -> Any:
            return await litellm.acompletion(
                model=MODEL, messages=messages, api_base=base, api_key="sk-bench", max_retries=0
            )

        return call
    if name == "raw-aiohttp":
        import aiohttp

        session = aiohttp.ClientSession()
        _closing.append(session.close)
        url = f"{base}/chat/completions"
        body = json.dumps({"model": "loopback", "messages": messages}).encode()
        headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}

        async def raw() -> Any:
            async with session.post(url, data=body, headers=headers) as response:
                data = json.loads(await response.read())
            return data["choices"][0]["message"]["content"]

        return raw
    transport = "litellm" if name == "litellm-judge" else "auto"
    judge = LiteLLMJudge(MODEL, api_base=base, api_key="sk-bench", transport=transport)
    request = JudgeRequest(prompt=PROMPT, instructions=SYSTEM, step="generate_reason")

    async def judged() -> Any:
        return await judge.complete(request)

    return judged


async def _rounds(call: Callable[[], Awaitable[Any]], args: argparse.Namespace) -> list[float]:
    gate = asyncio.Semaphore(args.concurrency)

    async def one() -> None:
        async with gate:
            await call()

    async def batch() -> float:
        cpu = time.process_time()
        await asyncio.gather(*(one() for _ in range(args.calls)))
        return (time.process_time() - cpu) / args.calls

    await batch()  # warm-up: imports, connections, caches
    print("READY", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    values = []
    for _ in range(args.rounds):
        values.append(await batch())
        print("ROUND", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
    return values


def child(args: argparse.Namespace) -> None:
    async def main() -> list[float]:
        call = await _client(args.child, f"http://127.0.0.1:{args.port}/v1")
        values = await _rounds(call, args)
        for close in _closing:
            await close()
        return values

    print("RESULT " + json.dumps(asyncio.run(main())), flush=True)


def measure(name: str, args: argparse.Namespace, judge_pid: int, port: int) -> dict[str, Any]:
    process = subprocess.Popen(
        [
            *(sys.executable, __file__, "--child", name, "--port", str(port)),
            *("--calls", str(args.calls), "--rounds", str(args.rounds)),
            *("--concurrency", str(args.concurrency)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    if process.stdout.readline().strip() != "READY":
        raise RuntimeError(f"{name}: the client did not warm up")
    server_per_request: list[float] = []
    for _ in range(args.rounds):
        before = _common.process_cpu_seconds(judge_pid)
        process.stdin.write("go\n")
        process.stdin.flush()
        if process.stdout.readline().strip() != "ROUND":
            raise RuntimeError(f"{name}: a round failed")
        server_per_request.append((_common.process_cpu_seconds(judge_pid) - before) / args.calls)
    process.stdin.write("go\n")
    process.stdin.flush()
    out, _ = process.communicate(timeout=600)
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    values = json.loads(line.removeprefix("RESULT "))
    return {
        "client_cpu_ms_per_call": _common.summary([v * 1000 for v in values]),
        "server_cpu_ms_per_request": _common.summary([v * 1000 for v in server_per_request]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--only", default="", help=f"comma-separated clients of {CLIENTS}")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    chosen = args.only.split(",") if args.only else list(CLIENTS)
    load_before = _common.machine()["load"]
    judge, port = _common.start_judge(0.0)
    try:
        clients = {name: measure(name, args, judge.pid, port) for name in chosen}
    finally:
        _common.stop_judge(judge)
    medians = {name: data["client_cpu_ms_per_call"]["median"] for name, data in clients.items()}
    ratios = {
        f"{a} / {b}": medians[a] / medians[b]
        for a, b in (
            ("litellm.acompletion", "fast-path"),
            ("litellm-judge", "fast-path"),
            ("fast-path", "raw-aiohttp"),
        )
        if a in medians and b in medians and medians[b] > 0
    }
    _common.emit(
        {
            "calls": args.calls,
            "rounds": args.rounds,
            "concurrency": args.concurrency,
            "clients": clients,
            "ratios": ratios,
            "load_before": load_before,
            "load_after": _common.machine()["load"],
        },
        args.output,
    )


if __name__ == "__main__":
    main()
