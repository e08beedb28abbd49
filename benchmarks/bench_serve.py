"""`scorewatch serve` under load: intake rate, 202 latency, CPU per request, memory, drain time.

    .venv/bin/python benchmarks/bench_serve.py [--requests 20000] [--clients 32]
        [--sampling 0.05] [--latency 0.05] [--max-queue 10000] [-o result.json]

A real `python -m scorewatch serve` process scores with the real summarization scorer (three
judge calls per run, `--sampling` of the traffic) and a model-free scorer (every request),
against the loopback judge process (`_judge_process.py`, `--latency` seconds per call). The load
comes from `--clients` raw keep-alive HTTP/1.1 connections in this process (cheap enough not to
be the bottleneck). Reported: requests/s while sending, 202 latency percentiles, the server's CPU
seconds per request, its RSS before and after, and how long the queue took to drain afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common
from _common import read_answer, start_judge, stop_judge
from summarization_prompt_size import SUMMARY, source_of

CONFIG = """\
[server]
shutdown_timeout = 120
log_level = "warning"

[judge]
model = "openai/loopback-judge"
api_key_env = "SCOREWATCH_BENCH_JUDGE_KEY"
model_options = {{ api_base = "http://127.0.0.1:{port}/v1", max_retries = 0 }}

[[scorers]]
id = "summary"
kind = "summarization"
sampling = {sampling}

[[scorers]]
id = "similarity"
kind = "content-similarity"

[live]
max_concurrency = 64
max_queue = {max_queue}

[sinks]
sqlite = "scores.db"
"""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _start_serve(
    directory: Path, profile: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start serve; with `profile`, under pyinstrument, its text report written there at exit."""
    stderr = (directory / "serve.stderr").open("wb")
    under = [] if profile is None else ["-m", "pyinstrument", "-r", "text", "-o", profile]
    process = subprocess.Popen(
        [sys.executable, *under, "-m", "scorewatch", "serve", "--config", "scorewatch.toml",
         "--listen", "127.0.0.1:0", "--workers", "1"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env={**os.environ, "SCOREWATCH_BENCH_JUDGE_KEY": "sk-bench"},  # the loopback judge's key
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = (directory / "serve.stderr").read_text(errors="replace")
        for line in text.splitlines():
            if "listening on http://" in line:
                # "... listening on http://HOST:PORT (h11 + uvloop)": the address alone.
                return process, line.rsplit("http://", 1)[1].split()[0]
        if process.poll() is not None:
            raise RuntimeError(f"serve exited:\n{text}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("serve did not start")


async def _load(address: str, requests: int, clients: int, source: str) -> dict[str, Any]:
    host, _, port = address.rpartition(":")
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    next_index = 0

    async def client() -> None:
        nonlocal next_index
        reader, writer = await asyncio.open_connection(host, int(port))
        while next_index < requests:
            index = next_index
            next_index += 1
            body = json.dumps(
                {"input": source, "output": SUMMARY, "target": "bench",
                 "trace_id": f"{index:032x}"}
            ).encode()  # fmt: skip
            started = time.perf_counter()
            writer.write(
                b"POST /v1/scores HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            status = (await read_answer(reader)).status
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - started
    latencies.sort()

    def pct(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 2)

    return {
        "wall_s": round(wall, 2),
        "requests_per_s": round(requests / wall, 1),
        "statuses": statuses,
        "latency_ms": {"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": pct(1.0)},
    }


def _stats(address: str) -> dict[str, int]:
    import httpx

    stats: dict[str, int] = httpx.get(f"http://{address}/v1/stats", timeout=30).json()
    return stats


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--sampling", type=float, default=0.05)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--max-queue", type=int, default=10_000)
    parser.add_argument("-o", "--output", default=None)
    args = parser.parse_args()

    judge, port = start_judge(args.latency)
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        directory = Path(folder)
        (directory / "scorewatch.toml").write_text(
            CONFIG.format(port=port, sampling=args.sampling, max_queue=args.max_queue)
        )
        serve, address = _start_serve(directory)
        try:
            rss_before, cpu_before = _rss(serve.pid), _cpu_seconds(serve.pid)
            load = asyncio.run(_load(address, args.requests, args.clients, source_of(400)))
            cpu_sending = _cpu_seconds(serve.pid) - cpu_before
            drain_started = time.perf_counter()
            while True:
                stats = _stats(address)
                if stats["queued"] == 0 and stats["in_flight"] == 0:
                    break
                time.sleep(0.1)
            drain = time.perf_counter() - drain_started
            rss_after = _rss(serve.pid)
            cpu_total = _cpu_seconds(serve.pid) - cpu_before
            serve.send_signal(signal.SIGTERM)
            exit_code = serve.wait(180)
        finally:
            if serve.poll() is None:
                serve.kill()
        judge_calls = stop_judge(judge)

    result = {
        "benchmark": "serve",
        "machine": _common.machine(),
        "parameters": vars(args) | {"output": None},
        "load": load,
        "server_cpu_ms_per_request_while_sending": round(cpu_sending / args.requests * 1000, 3),
        "server_cpu_ms_per_request_total": round(cpu_total / args.requests * 1000, 3),
        "drain_after_last_request_s": round(drain, 2),
        "rss_mib": {"before": rss_before >> 20, "after": rss_after >> 20},
        "accounting": stats,
        "judge_calls": judge_calls,
        "exit_code": exit_code,
    }
    _common.emit(result, args.output)


if __name__ == "__main__":
    main()
