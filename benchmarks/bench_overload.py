"""`scorewatch serve` past its capacity: answer latency, 429s and accepted throughput at rising
offered rates.

    .venv/bin/python benchmarks/bench_overload.py [--multiples 0.5,1,2,5,10] [--concurrency 6]
        [--seconds 10] [--connections 256] [--sampling 1] [--latency 0.05] [--flood 3]
        [-o result.json]
    .venv/bin/python benchmarks/bench_overload.py --rates 25,50,100,200,400,800 --concurrency 64
        --sampling 0.05     # the earlier workload (issue 17): HTTP-bound, no set capacity

Open-loop load: requests are sent on a fixed schedule (`rate` per second for `--seconds`),
whatever the answers do, each on an idle keep-alive connection of a pool of at most
`--connections` (256), as an agent's HTTP client would hold; a request's latency counts from its
scheduled time (including any wait for a connection), so a server falling behind shows as
latency rather than as a slower sender. The server is a real `python -m scorewatch serve` with
the workload of bench_serve.py: the summarization scorer (three judge calls per run) on
`--sampling` of the traffic against the loopback judge process (`--latency` s per call), and
content similarity on every request, with `live.max_concurrency = --concurrency`.

Capacity: with every request judged (`--sampling 1`), the service finishes at most
`concurrency / (3 x latency)` requests per second (6 / 0.15 = 40/s by default) whatever the
HTTP side does; `--multiples` offers that many times it (0.5x to 10x by default). Accepted
throughput should hold near capacity at every multiple, and refusals stay fast. (With `--rates`
the rates are given as they are, for the HTTP-bound workload of issue 17.)

`--flood N` ends with a closed-loop flood: N processes of `--flood-connections` (16)
keep-alive connections each, every one sending its next request as soon as the last is
answered, for `--seconds`: as much load as the server answers, whatever its capacity. Reported:
answers per second, accepted per second (as a share of capacity) and the server's CPU per
answer (what a refusal costs).

Between rates the queue drains. Reported per rate: answers by status, latency percentiles of all
answers, of the 202s and of the 429s, the 202 rate (and its share of the capacity), how long
after its request the accepted work's result was stored (content similarity, a millisecond run:
that is its wait in the queue), the latency of `/healthz` polled every 20 ms on a connection of
its own, the server's CPU and the load average; and the highest rate whose p99 stays under
100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import sqlite3
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import _common
from _common import read_answer, start_judge, stop_judge
from bench_serve import CONFIG, _cpu_seconds, _rss, _start_serve, _stats
from summarization_prompt_size import SUMMARY, source_of

_TARGET_P99_MS = 100.0


class _Connections:
    """Keep-alive connections to the server, at most `limit` (as a client's pool would hold):
    an idle one, else a new one, else wait for one to come back."""

    def __init__(self, host: str, port: int, limit: int) -> None:
        self._host = host
        self._port = port
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(limit)
        self.opened = 0

    async def take(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        await self._slots.acquire()
        if self._idle:
            return self._idle.pop()
        self.opened += 1
        try:
            return await asyncio.open_connection(self._host, self._port)
        except BaseException:
            self._slots.release()
            raise

    def give_back(self, pair: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None) -> None:
        if pair is not None:
            self._idle.append(pair)
        self._slots.release()

    def close(self) -> None:
        for _reader, writer in self._idle:
            writer.close()
        self._idle.clear()


async def _exchange(pool: _Connections, body: bytes) -> int:
    reader, writer = await pool.take()
    try:
        writer.write(
            b"POST /v1/scores HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        answer = await read_answer(reader)
    except BaseException:
        writer.close()
        pool.give_back(None)
        raise
    if answer.close:
        writer.close()
    pool.give_back(None if answer.close else (reader, writer))
    return answer.status


def _percentiles(values: list[float]) -> dict[str, float]:
    """p50/p90/p99/max in milliseconds of durations in seconds."""
    if not values:
        return {}
    values = sorted(values)

    def at(q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1)

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": at(1.0)}


async def _poll_healthz(host: str, port: int, stop: asyncio.Event) -> list[float]:
    """`/healthz` latencies, one request every 20 ms on a keep-alive connection of its own."""
    reader, writer = await asyncio.open_connection(host, port)
    latencies: list[float] = []
    try:
        while not stop.is_set():
            started = time.perf_counter()
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n")
            await read_answer(reader)
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.02)
    finally:
        writer.close()
    return latencies


async def _round(
    address: str, rate: int, seconds: float, source: str, first: int, connections: int = 256
) -> dict[str, Any]:
    host, _, port = address.rpartition(":")
    pool = _Connections(host, int(port), connections)
    total = int(rate * seconds)
    answers: list[tuple[int, float]] = []
    accepted_at: dict[str, float] = {}  # trace id -> wall-clock time the request was due
    wall = time.time() - time.perf_counter()
    errors: dict[str, int] = {}
    stop_polling = asyncio.Event()
    polling = asyncio.create_task(_poll_healthz(host, int(port), stop_polling))

    async def one(index: int, due: float) -> None:
        body = json.dumps(
            {"input": source, "output": SUMMARY, "target": "bench", "trace_id": f"{index:032x}"}
        ).encode()
        try:
            status = await asyncio.wait_for(_exchange(pool, body), 60)
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as error:
            kind = type(error).__name__
            errors[kind] = errors.get(kind, 0) + 1
            return
        answers.append((status, time.perf_counter() - due))
        if status == 202:
            accepted_at[f"{index:032x}"] = wall + due

    loop_start = time.perf_counter()
    tasks: list[asyncio.Task[None]] = []
    for index in range(total):
        due = loop_start + index / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(first + index, due)))
    sending = time.perf_counter() - loop_start
    await asyncio.gather(*tasks)
    stop_polling.set()
    healthz = await polling
    pool.close()
    percentiles = _percentiles

    statuses: dict[str, int] = {}
    for status, _latency in answers:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    return {
        "offered_per_s": rate,
        "sent": total,
        "sending_s": round(sending, 2),
        "statuses": statuses,
        "client_errors": sum(errors.values()),
        "client_errors_by_kind": errors,
        "connections_opened": pool.opened,
        "latency_ms": percentiles([latency for _status, latency in answers]),
        "latency_202_ms": percentiles([latency for status, latency in answers if status == 202]),
        "latency_429_ms": percentiles([latency for status, latency in answers if status == 429]),
        "share_429": round(statuses.get("429", 0) / max(len(answers), 1), 3),
        "accepted_per_s": round(statuses.get("202", 0) / seconds, 1),
        "healthz_ms": percentiles(healthz),
        "accepted_at": accepted_at,
    }


def _flood_client(address: str, seconds: float, connections: int, first: int, out: Any) -> None:
    """One flooding process: `connections` keep-alive connections, each sending its next
    request as soon as the answer to the last one is read, for `seconds`; the statuses go to
    `out`."""
    host, _, port = address.rpartition(":")
    source = source_of(400)
    statuses: dict[str, int] = {}

    async def connection(offset: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        deadline = time.monotonic() + seconds
        index = first + offset * 10_000_000
        while time.monotonic() < deadline:
            body = json.dumps(
                {"input": source, "output": SUMMARY, "target": "bench", "trace_id": f"{index:032x}"}
            ).encode()
            index += 1
            writer.write(
                b"POST /v1/scores HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            try:
                answer = await read_answer(reader)
            except (OSError, asyncio.IncompleteReadError):
                statuses["error"] = statuses.get("error", 0) + 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, int(port))
                continue
            statuses[str(answer.status)] = statuses.get(str(answer.status), 0) + 1
            if answer.close:
                writer.close()
                reader, writer = await asyncio.open_connection(host, int(port))
        writer.close()

    async def flood() -> None:
        await asyncio.gather(*(connection(offset) for offset in range(connections)))

    asyncio.run(flood())
    out.put(statuses)


def _flood(address: str, processes: int, connections: int, seconds: float, first: int) -> Any:
    """A closed-loop flood from `processes` processes: as much as the server answers."""
    out: Any = multiprocessing.Queue()
    workers = [
        multiprocessing.Process(
            target=_flood_client,
            args=(address, seconds, connections, first + n * 100_000_000, out),
        )
        for n in range(processes)
    ]
    for worker in workers:
        worker.start()
    statuses: dict[str, int] = {}
    for _worker in workers:
        for status, count in out.get().items():
            statuses[status] = statuses.get(status, 0) + count
    for worker in workers:
        worker.join()
    answered = sum(count for status, count in statuses.items() if status != "error")
    return {
        "flood_processes": processes,
        "flood_connections": processes * connections,
        "statuses": statuses,
        "answered_per_s": round(answered / seconds, 1),
        "accepted_per_s": round(statuses.get("202", 0) / seconds, 1),
    }


def _result_delays(database: Path, accepted_at: dict[str, float]) -> dict[str, float]:
    """How long after its request each accepted item's content-similarity result was stored."""
    connection = sqlite3.connect(database)
    try:
        rows = connection.execute(
            "SELECT traceId, createdAt FROM mastra_scorers WHERE scorerId = 'similarity'"
        ).fetchall()
    finally:
        connection.close()
    delays = [
        datetime.fromisoformat(created).timestamp() - accepted_at[trace]
        for trace, created in rows
        if trace in accepted_at
    ]
    return _percentiles(delays) | {"stored": len(delays)}


def _config(port: int, sampling: float, concurrency: int, max_queue_delay: float) -> str:
    """bench_serve.py's workload, with `concurrency` runs at once and at most
    `max_queue_delay` seconds of work waiting (a short wait: the rounds measure the steady
    state, not how fast the queue fills)."""
    text = CONFIG.format(port=port, sampling=sampling, max_queue=10_000)
    return text.replace(
        "max_concurrency = 64",
        f"max_concurrency = {concurrency}\nmax_queue_delay = {max_queue_delay}",
    )


def _wait_idle(address: str, timeout: float = 600) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        stats = _stats(address)
        if stats["queued"] == 0 and stats["in_flight"] == 0:
            break
        time.sleep(0.2)
    return round(time.perf_counter() - started, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--multiples", default="0.5,1,2,5,10")
    parser.add_argument("--rates", default=None, help="offered rates, instead of --multiples")
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--max-queue-delay", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=256)
    parser.add_argument("--sampling", type=float, default=1.0)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument(
        "--flood", type=int, default=0, help="then a closed-loop flood from this many processes"
    )
    parser.add_argument("--flood-connections", type=int, default=16)
    parser.add_argument("-o", "--output", default=None)
    parser.add_argument(
        "--profile", default=None, help="run serve under pyinstrument; its text report to this file"
    )
    args = parser.parse_args()
    # Three judge calls of `latency` per summarization run, `concurrency` runs at once.
    capacity = args.concurrency / (3 * args.latency) / args.sampling
    if args.rates is not None:
        rates = [int(rate) for rate in args.rates.split(",")]
    else:
        rates = [max(1, round(float(m) * capacity)) for m in args.multiples.split(",")]

    judge, port = start_judge(args.latency)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-overload-") as folder:
        directory = Path(folder)
        config = _config(port, args.sampling, args.concurrency, args.max_queue_delay)
        (directory / "scorewatch.toml").write_text(config)
        serve, address = _start_serve(directory, args.profile)
        try:
            source = source_of(400)
            # Warm-up: litellm, the SQLite file, the measured scoring rate.
            asyncio.run(_round(address, max(5, round(capacity / 2)), 3, source, 10_000_000))
            _wait_idle(address)
            first = 0
            for rate in rates:
                cpu_before = _cpu_seconds(serve.pid)
                result = asyncio.run(
                    _round(address, rate, args.seconds, source, first, args.connections)
                )
                first += result["sent"]
                result["server_cpu_s"] = round(_cpu_seconds(serve.pid) - cpu_before, 2)
                result["multiple_of_capacity"] = round(rate / capacity, 2)
                result["accepted_share_of_capacity"] = round(result["accepted_per_s"] / capacity, 2)
                result["drain_after_s"] = _wait_idle(address)
                accepted_at = result.pop("accepted_at")
                result["result_after_ms"] = _result_delays(directory / "scores.db", accepted_at)
                result["load_average"] = [round(x, 2) for x in os.getloadavg()]
                rounds.append(result)
                print(json.dumps(result), flush=True)
            flood = None
            if args.flood:
                cpu_before = _cpu_seconds(serve.pid)
                flood = _flood(address, args.flood, args.flood_connections, args.seconds, first)
                cpu = _cpu_seconds(serve.pid) - cpu_before
                answered = flood["answered_per_s"] * args.seconds
                flood["server_cpu_s"] = round(cpu, 2)
                flood["server_cpu_us_per_answer"] = round(cpu / max(answered, 1) * 1e6, 1)
                flood["accepted_share_of_capacity"] = round(flood["accepted_per_s"] / capacity, 2)
                flood["drain_after_s"] = _wait_idle(address)
                flood["load_average"] = [round(x, 2) for x in os.getloadavg()]
                print(json.dumps(flood), flush=True)
            stats = _stats(address)
            rss = _rss(serve.pid)
            serve.send_signal(signal.SIGTERM)
            exit_code = serve.wait(300)
        finally:
            if serve.poll() is None:
                serve.kill()
        judge_calls = stop_judge(judge)

    under = [r["offered_per_s"] for r in rounds if r["latency_ms"].get("p99", 1e9) < _TARGET_P99_MS]
    _common.emit(
        {
            "benchmark": "overload",
            "machine": _common.machine(),
            "parameters": vars(args) | {"output": None, "profile": None},
            "capacity_per_s": round(capacity, 1),
            "rounds": rounds,
            "flood": flood,
            "highest_rate_with_p99_under_100ms": max(under) if under else None,
            "accounting": stats,
            "rss_mib_after": rss >> 20,
            "judge_calls": judge_calls,
            "exit_code": exit_code,
        },
        args.output,
    )


if __name__ == "__main__":
    main()
