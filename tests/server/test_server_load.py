"""A short load test of the real server process: many requests from 32 concurrent clients against
a loopback judge with 50 ms latency. Every request is answered (202 or 429), the accounting adds
up, and memory stays bounded.

The request count is `SCOREWATCH_LOAD_REQUESTS`: 20,000 by default under CI (CI=true), 5,000
by default elsewhere (on a shared 2-core machine 20,000 take about a minute). The clients are raw
keep-alive HTTP/1.1 connections (an httpx client spends ~3 ms of CPU per request here, more
than the server). Nothing here asserts a duration: throughput is measured in benchmarks/.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from scorewatch.testing import LoopbackJudgeServer, Reply
from serve_support import ServeProcess, judge_table, sqlite_rows, write_config

pytestmark = pytest.mark.e2e

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
REQUESTS = int(os.environ.get("SCOREWATCH_LOAD_REQUESTS", "20000" if IN_CI else "5000"))
CLIENTS = 32
# Judged runs are a sample of the traffic; half of it is also scored by a model-free scorer.
JUDGED_SHARE = 0.02
LENGTH_SHARE = 0.5
MAX_QUEUE = 2000
# Beyond the process's size after start-up, a full queue of small items and the SQLite cache
# fit well within this; a leak per request (thousands of them) would not.
RSS_GROWTH_LIMIT = 200 * 1024 * 1024

CONFIG = """\
[server]
shutdown_timeout = 60

{judge}

[[scorers]]
id = "judged"
factory = "sw_test_scorers:make_judged_scorer"
sampling = {judged_share}

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"
sampling = {length_share}

[live]
max_concurrency = 32
max_queue = {max_queue}

[sinks]
sqlite = "scores.db"
"""


class RssSampler(threading.Thread):
    def __init__(self, process: ServeProcess) -> None:
        super().__init__(daemon=True)
        self.process = process
        self.samples: list[int] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.samples.append(self.process.rss_bytes())
            except (OSError, AttributeError):
                return
            self.stopping.wait(0.2)


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes
) -> tuple[int, dict[str, str], bytes]:
    writer.write(
        b"POST /v1/scores HTTP/1.1\r\nHost: loopback\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    payload = await reader.readexactly(int(headers.get("content-length", "0")))
    return int(status_line.split()[1]), headers, payload


async def drive(host: str, port: int) -> tuple[Counter[int], int, int]:
    """Send REQUESTS requests over CLIENTS keep-alive connections; returns (statuses, accepted
    runs, answered requests)."""
    statuses: Counter[int] = Counter()
    accepted = 0
    answered = 0
    next_index = 0

    async def client_loop() -> None:
        nonlocal next_index, accepted, answered
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while next_index < REQUESTS:
                index = next_index
                next_index += 1
                body = json.dumps(
                    {
                        "input": f"question {index}",
                        "output": f"answer number {index}",
                        "target": "load-agent",
                        "trace_id": f"{index:032x}",
                    }
                ).encode()
                status, headers, payload = await _exchange(reader, writer, body)
                statuses[status] += 1
                answered += 1
                if status == 202:
                    accepted += len(json.loads(payload)["accepted"])
                else:
                    assert headers.get("retry-after"), payload
        finally:
            writer.close()

    await asyncio.gather(*(client_loop() for _ in range(CLIENTS)))
    return statuses, accepted, answered


@pytest.mark.timeout(300)
def test_load_every_request_answered_and_accounted(tmp_path: Path) -> None:
    reply = Reply('{"score": 0.5}', delay=0.05)
    with LoopbackJudgeServer(default=reply, record_requests=False) as judge:
        body = CONFIG.format(
            judge=judge_table(judge.base_url),
            judged_share=JUDGED_SHARE,
            length_share=LENGTH_SHARE,
            max_queue=MAX_QUEUE,
        )
        process = ServeProcess(
            write_config(tmp_path, body), env={"SW_TEST_JUDGE_BASE": judge.base_url}
        )
        sampler = RssSampler(process)
        try:
            process.wait_listening()
            baseline = process.rss_bytes()
            sampler.start()
            started = time.monotonic()
            host, _, port = process.url.removeprefix("http://").rpartition(":")
            statuses, accepted, answered = asyncio.run(drive(host, int(port)))
            elapsed = time.monotonic() - started
            assert process.terminate(timeout=120) == 0
        finally:
            sampler.stopping.set()
            process.kill()
        judge_calls = judge.request_count

    assert answered == REQUESTS
    assert set(statuses) <= {202, 429}, statuses
    accounting = process.final_accounting()
    assert accounting["sampled"] == accepted
    assert accounting["rejected_requests"] == statuses[429]
    assert (
        accounting["scored"] + accounting["failed"] + accounting["dropped_shutdown"]
        == accounting["sampled"]
    )
    assert accounting["dropped_shutdown"] == 0  # the drain had time enough
    assert accounting["failed"] == 0
    assert accounting["sink_errors"] == 0
    rows = sqlite_rows(tmp_path / "scores.db")
    assert len(rows) == accounting["scored"]
    judged = sum(1 for row in rows if row["scorerId"] == "judged")
    assert judged == judge_calls  # one judge call per judged run, none lost or repeated
    assert judged > 0
    peak = max(sampler.samples, default=baseline)
    assert peak - baseline < RSS_GROWTH_LIMIT, (baseline, peak)
    print(
        f"\nload: {REQUESTS} requests in {elapsed:.1f}s ({REQUESTS / elapsed:.0f}/s), "
        f"statuses {dict(statuses)}, runs accepted {accepted}, judged {judged}, "
        f"RSS {baseline / 2**20:.0f} -> peak {peak / 2**20:.0f} MiB"
    )
