"""An open-loop HTTP load generator: requests leave on a schedule, whatever the server does.

    .venv/bin/python benchmarks/openloop.py http://127.0.0.1:8000/v1/scores --rate 3000 \
        --duration 10 [--body-file body.json] [--content-type application/json]
        [--connections 256] [--pid 1234]

A closed loop (N clients, each waiting for its answer) slows down with the server and hides
its queueing; here request i is due at `start + i / rate` and its latency counts from then
(no coordinated omission). Requests go over up to `--connections` keep-alive HTTP/1.1
connections; one that is due while all are busy waits for the first free one (its latency
grows) and, past four times `--connections` in flight, is counted as `not_sent`. Raw HTTP
over uvloop streams keeps the generator's own CPU per request low; `--processes` generators
(default 2) share the rate, so that one Python process is not the bottleneck (they share the
machine with the server: state it with the results).

With `--pid`, the CPU seconds of that process and its descendants during the run are reported,
per answered request and per 2xx answer. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import _common
from _common import read_answer

__all__ = ["process_tree_cpu", "run_open_loop"]


def process_tree_cpu(pid: int) -> float:
    """User + system CPU seconds of `pid` and every living descendant."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _request(url: str, body: bytes, content_type: str) -> tuple[str, int, bytes]:
    """Host, port and the raw request."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("latin-1")
    return host, port, head + body


async def _open_loop(
    url: str,
    bodies: list[bytes],
    content_type: str,
    rate: float,
    duration: float,
    connections: int,
) -> dict[str, Any]:
    requests = [_request(url, body, content_type) for body in bodies]
    host, port = requests[0][0], requests[0][1]
    raws = [raw for _host, _port, raw in requests]
    loop = asyncio.get_running_loop()
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    statuses: dict[int, int] = {}
    latencies: list[float] = []
    counts = {"not_sent": 0, "errors": 0, "in_flight": 0}
    free = asyncio.Condition()
    opened = 0

    async def connection() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        nonlocal opened
        if idle:
            return idle.pop()
        if opened < connections:
            opened += 1
            try:
                return await asyncio.open_connection(host, port)
            except OSError:
                opened -= 1
                raise
        async with free:
            await free.wait_for(lambda: bool(idle))
            return idle.pop()

    async def one(due: float, raw: bytes) -> None:
        nonlocal opened
        counts["in_flight"] += 1
        try:
            try:
                reader, writer = await connection()
            except OSError:
                counts["errors"] += 1
                return
            try:
                writer.write(raw)
                answer = await read_answer(reader)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                counts["errors"] += 1
                writer.close()
                opened -= 1
                return
        finally:
            counts["in_flight"] -= 1
        latencies.append(loop.time() - due)
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
        if answer.close:
            writer.close()
            opened -= 1
        else:
            idle.append((reader, writer))
        async with free:
            free.notify()

    total = int(rate * duration)
    tasks: set[asyncio.Task[None]] = set()
    start = loop.time() + 0.05
    sent = 0
    while sent < total:
        now = loop.time()
        due_count = min(total, int((now - start) * rate) + 1) - sent
        for _ in range(max(0, due_count)):
            due = start + sent / rate
            sent += 1
            if counts["in_flight"] >= connections * 4:
                counts["not_sent"] += 1
                continue
            task = loop.create_task(one(due, raws[sent % len(raws)]))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.sleep(0.001)
    sending = loop.time() - start
    if tasks:
        await asyncio.wait(set(tasks), timeout=60)
    # Answers still arriving after the last request left count against the rate.
    wall = loop.time() - start
    for _reader, writer in idle:
        writer.close()
    return _summary(rate, sending, wall, statuses, latencies, counts, opened)


def _summary(
    rate: float,
    sending: float,
    wall: float,
    statuses: dict[int, int],
    latencies: list[float],
    counts: dict[str, int],
    opened: int,
) -> dict[str, Any]:
    latencies.sort()

    def pct(q: float) -> float | None:
        if not latencies:
            return None
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 2)

    accepted = sum(n for status, n in statuses.items() if 200 <= status < 300)
    return {
        "offered_per_s": rate,
        "sending_s": round(sending, 2),
        "wall_s": round(wall, 2),
        "answered": len(latencies),
        "accepted_2xx": accepted,
        "accepted_per_s": round(accepted / wall, 1),
        "answered_per_s": round(len(latencies) / wall, 1),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "_latencies": latencies,
        "not_sent": counts["not_sent"],
        "errors": counts["errors"],
        "connections_opened": opened,
        "latency_ms": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": pct(1.0)},
    }


def _one_process(
    url: str,
    bodies: list[bytes],
    content_type: str,
    rate: float,
    duration: float,
    connections: int,
) -> dict[str, Any]:
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    cpu = time.process_time()
    result: dict[str, Any] = runner(
        _open_loop(url, bodies, content_type, rate, duration, connections)
    )
    result["generator_cpu_s"] = time.process_time() - cpu
    return result


def run_open_loop(
    url: str,
    body: bytes | list[bytes],
    *,
    rate: float,
    duration: float,
    content_type: str = "application/json",
    connections: int = 256,
    pid: int | None = None,
    processes: int = 2,
) -> dict[str, Any]:
    """Offer `rate` requests/s for `duration` s from `processes` generator processes (each
    offering its share); with `pid`, the server's CPU per answer. A list of bodies is sent in
    turn."""
    bodies = body if isinstance(body, list) else [body]
    cpu_before = process_tree_cpu(pid) if pid is not None else 0.0
    wall = time.perf_counter()
    if processes == 1:
        result = _one_process(url, bodies, content_type, rate, duration, connections)
        generator_cpu = result.pop("generator_cpu_s")
    else:
        share = (url, bodies, content_type, rate / processes, duration, connections // processes)
        with ProcessPoolExecutor(processes) as pool:
            parts = list(pool.map(_one_process, *zip(*[share] * processes, strict=True)))
        statuses: dict[int, int] = {}
        for part in parts:
            for status, n in part["statuses"].items():
                statuses[int(status)] = statuses.get(int(status), 0) + n
        result = _summary(
            rate,
            max(p["sending_s"] for p in parts),
            max(p["wall_s"] for p in parts),
            statuses,
            [x for p in parts for x in p["_latencies"]],
            {k: sum(p[k] for p in parts) for k in ("not_sent", "errors")},
            sum(p["connections_opened"] for p in parts),
        )
        generator_cpu = sum(p["generator_cpu_s"] for p in parts)
    result.pop("_latencies")
    # The generator shares the machine with the server: what it takes is not the server's.
    result["generator_cpu_s"] = round(generator_cpu, 3)
    result["generator_cores_busy"] = round(generator_cpu / (time.perf_counter() - wall), 2)
    if result["answered"]:
        result["generator_cpu_us_per_answer"] = round(generator_cpu / result["answered"] * 1e6, 1)
    if pid is not None:
        cpu = process_tree_cpu(pid) - cpu_before
        result["server_cpu_s"] = round(cpu, 3)
        result["server_cores_busy"] = round(cpu / (time.perf_counter() - wall), 2)
        if result["accepted_2xx"]:
            result["server_cpu_us_per_2xx"] = round(cpu / result["accepted_2xx"] * 1e6, 1)
        if result["answered"]:
            # Under overload serve answers some requests 429 unread: CPU per answer of any kind.
            result["server_cpu_us_per_answer"] = round(cpu / result["answered"] * 1e6, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--rate", type=float, required=True, help="requests per second offered")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--body-file", default=None, help="the request body (default: a score)")
    parser.add_argument("--content-type", default="application/json")
    parser.add_argument("--connections", type=int, default=256)
    parser.add_argument("--pid", type=int, default=None, help="report this process tree's CPU")
    parser.add_argument("--processes", type=int, default=2, help="generator processes")
    args = parser.parse_args()
    body = (
        Path(args.body_file).read_bytes()
        if args.body_file
        else json.dumps({"input": "q", "output": "a", "target": "bench"}).encode()
    )
    result = run_open_loop(
        args.url,
        body,
        rate=args.rate,
        duration=args.duration,
        content_type=args.content_type,
        connections=args.connections,
        pid=args.pid,
        processes=args.processes,
    )
    result["machine"] = _common.machine()
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
