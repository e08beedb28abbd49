"""Soak test: `scorewatch serve` under steady loopback load with judge faults injected.

    .venv/bin/python benchmarks/soak.py [--minutes 2] [--rate 100] [--clients 8]
        [--error-rate 0.05] [--stall-rate 0.002] [--stall 10] [-o result.json]

A loopback judge process (`_judge_process.py`) answers after 50 ms, fails 5% of calls with an
HTTP 500 and stalls a few for 10 s; `scorewatch serve` (a real process, SQLite sink) takes
`--rate` requests per second from `--clients` keep-alive connections for `--minutes`, each
request offered to a judged scorer (one judge call per run) and a function-only scorer. Every 5 s
the service's RSS, open file descriptors, threads and `/v1/stats` are sampled. At the end the
load stops, the service drains, and it is stopped with SIGTERM. Checked:

- accounting: accepted (sampled) == scored + failed + dropped_shutdown, from the service's final
  accounting line, and the SQLite sink holds one row per scored or failed run;
- RSS flat: the last quarter's median is within 16 MiB (or 10%) of the second quarter's;
- open fds and threads flat: no more at the end (idle) than after warm-up, plus a small margin;
- nothing left behind: queue and in-flight back to 0 after the drain, exit code 0.

Bounded in count and time (the rate and the duration), and loopback only. Exit code 1 when a
check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

import _common
from _common import read_answer, start_judge, stop_judge

LISTENING = re.compile(r"scorewatch serve: listening on (http://\S+)")
STOPPED = re.compile(r"scorewatch serve: stopped; accounting (\{.*\})")

SCORERS = textwrap.dedent(
    """
    import os

    import scorewatch as sw


    def make_judged():
        judge = sw.JudgeConfig(
            model="openai/loopback-judge",
            instructions="You rate answers from 0 to 1.",
            model_options={
                "api_base": os.environ["SW_SOAK_JUDGE_BASE"],
                "api_key": "sk-soak",
                "max_retries": 0,
                "timeout": 30,
            },
        )
        scorer = sw.create_scorer(id="judged", description="One judge call", judge=judge)
        return scorer.generate_score(
            sw.PromptStep("rate", lambda ctx: f"Rate this answer: {ctx.run.output}")
        )


    def make_length():
        scorer = sw.create_scorer(id="length", description="Output length, capped at 100")
        return scorer.generate_score(lambda ctx: min(1.0, len(str(ctx.run.output)) / 100))
    """
)

CONFIG = """\
[server]
shutdown_timeout = 60

[[scorers]]
id = "judged"
factory = "sw_soak_scorers:make_judged"

[[scorers]]
id = "length"
factory = "sw_soak_scorers:make_length"

[live]
max_concurrency = 64
max_queue = 2000

[sinks]
sqlite = "scores.db"
"""


# -- the service process -----------------------------------------------------------------------


class Service:
    def __init__(self, directory: Path, judge_base: str) -> None:
        (directory / "sw_soak_scorers.py").write_text(SCORERS)
        config = directory / "scorewatch.toml"
        config.write_text(CONFIG)
        self.stderr_path = directory / "serve.stderr"
        self._stderr = self.stderr_path.open("wb")
        env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", SW_SOAK_JUDGE_BASE=judge_base)
        command = [sys.executable, "-m", "scorewatch", "serve", "--config", str(config)]
        self.process = subprocess.Popen(
            [*command, "--listen", "127.0.0.1:0", "--workers", "1"],
            cwd=directory,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        self.url = ""

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_listening(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = LISTENING.search(self.stderr())
            if found:
                self.url = found.group(1)
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited early:\n{self.stderr()}")
            time.sleep(0.1)
        raise RuntimeError(f"serve did not start:\n{self.stderr()}")

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"{self.url}/v1/stats", timeout=10) as response:
            data: dict[str, int] = json.loads(response.read())
        return data

    def probe(self) -> dict[str, Any]:
        pid = self.process.pid
        status = Path(f"/proc/{pid}/status").read_text()
        rss = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]
        threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
        return {
            "t": time.monotonic(),
            "rss_mb": rss / 2**20,
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": threads,
            "stats": self.stats(),
        }

    def terminate(self, timeout: float = 120.0) -> tuple[int, dict[str, int] | None]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        finally:
            self._stderr.close()
        found = STOPPED.search(self.stderr())
        return code, json.loads(found.group(1)) if found else None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._stderr.close()


# -- load --------------------------------------------------------------------------------------


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes
) -> tuple[int, bytes]:
    writer.write(
        b"POST /v1/scores HTTP/1.1\r\nHost: loopback\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    answer = await read_answer(reader)
    return answer.status, answer.body


async def drive(
    service: Service, seconds: float, rate: float, clients: int, samples: list[dict[str, Any]]
) -> dict[str, int]:
    host, _, port = service.url.removeprefix("http://").rpartition(":")
    deadline = time.monotonic() + seconds
    interval = clients / rate  # each client paces itself: `rate` requests/s in all
    sent = {"requests": 0, "accepted_runs": 0, "rejected": 0, "errors": 0}

    async def client(number: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        next_at = time.monotonic() + number * interval / clients
        try:
            while time.monotonic() < deadline:
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                next_at += interval
                index = sent["requests"]
                sent["requests"] += 1
                body = json.dumps(
                    {
                        "input": f"question {index}",
                        "output": f"answer number {index} " + "word " * (index % 40),
                        "target": "soak-agent",
                        "trace_id": f"{index + 1:032x}",
                    }
                ).encode()
                status, payload = await exchange(reader, writer, body)
                if status == 202:
                    sent["accepted_runs"] += len(json.loads(payload)["accepted"])
                elif status == 429:
                    sent["rejected"] += 1
                else:
                    sent["errors"] += 1
        finally:
            writer.close()

    async def sampler() -> None:
        while time.monotonic() < deadline:
            samples.append(await asyncio.to_thread(service.probe))
            await asyncio.sleep(5.0)

    await asyncio.gather(sampler(), *(client(n) for n in range(clients)))
    return sent


# -- checks ------------------------------------------------------------------------------------


def quarter_median(samples: list[dict[str, Any]], quarter: int, key: str) -> float:
    size = max(1, len(samples) // 4)
    chosen = samples[quarter * size : (quarter + 1) * size] or samples[-size:]
    return statistics.median(s[key] for s in chosen)


def checks(
    samples: list[dict[str, Any]],
    idle: dict[str, Any],
    code: int,
    accounting: dict[str, int] | None,
    rows: int,
) -> dict[str, bool]:
    early_rss = quarter_median(samples, 1, "rss_mb")
    late_rss = quarter_median(samples, 3, "rss_mb")
    # Pools (judge connections, worker threads) grow to their working size during the first
    # half; a leak keeps growing after that.
    half = max(1, len(samples) // 2)
    first, second = samples[:half], samples[half:] or samples[-1:]
    result = {
        "exit code 0": code == 0,
        "final accounting reported": accounting is not None,
        "rss flat": late_rss - early_rss <= max(16.0, early_rss * 0.10),
        "fds flat": max(s["fds"] for s in second) <= max(s["fds"] for s in first) + 8
        and idle["fds"] <= max(s["fds"] for s in samples),
        "threads flat": max(s["threads"] for s in second) <= max(s["threads"] for s in first) + 2
        and idle["threads"] <= max(s["threads"] for s in samples),
        "queue and in-flight drained": idle["stats"]["queued"] == 0
        and idle["stats"]["in_flight"] == 0,
    }
    if accounting is not None:
        result["accepted == scored + failed + dropped"] = accounting["sampled"] == (
            accounting["scored"] + accounting["failed"] + accounting["dropped_shutdown"]
        )
        result["one sink row per scored or failed run"] = rows == (
            accounting["scored"] + accounting["failed"]
        )
        result["judge faults seen as failures"] = accounting["failed"] > 0
    return result


def sink_rows(path: Path) -> int:
    if not path.exists():
        return -1
    conn = sqlite3.connect(path)
    try:
        (count,) = conn.execute("SELECT COUNT(*) FROM mastra_scorers").fetchone()
    finally:
        conn.close()
    return int(count)


def wait_idle(service: Service, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    probe = service.probe()
    while time.monotonic() < deadline:
        probe = service.probe()
        if probe["stats"]["queued"] == 0 and probe["stats"]["in_flight"] == 0:
            break
        time.sleep(0.5)
    time.sleep(1.0)  # let keep-alive connections and finished tasks be released
    return service.probe()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--error-rate", type=float, default=0.05)
    parser.add_argument("--stall-rate", type=float, default=0.002)
    parser.add_argument("--stall", type=float, default=10.0)
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    faults = [
        *("--error-rate", str(args.error_rate)),
        *("--stall-rate", str(args.stall_rate)),
        *("--stall", str(args.stall)),
        *("--max-seconds", str(args.minutes * 60 + 600)),
    ]
    judge, port = start_judge(0.05, *faults)
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="scorewatch-soak-") as tmp:
        directory = Path(tmp)
        service = Service(directory, f"http://127.0.0.1:{port}/v1")
        try:
            service.wait_listening()
            sent = asyncio.run(drive(service, args.minutes * 60, args.rate, args.clients, samples))
            idle = wait_idle(service, timeout=args.stall * 3 + 60)
            code, accounting = service.terminate()
            rows = sink_rows(directory / "scores.db")
        finally:
            service.kill()
            judge_calls = stop_judge(judge)
        verdicts = checks(samples, idle, code, accounting, rows)
        report = {
            "minutes": args.minutes,
            "rate": args.rate,
            "clients": args.clients,
            "faults": {"error_rate": args.error_rate, "stall_rate": args.stall_rate},
            "sent": sent,
            "judge_calls": judge_calls,
            "accounting": accounting,
            "sink_rows": rows,
            "rss_mb": [round(s["rss_mb"], 1) for s in samples] + [round(idle["rss_mb"], 1)],
            "fds": [s["fds"] for s in samples] + [idle["fds"]],
            "threads": [s["threads"] for s in samples] + [idle["threads"]],
            "checks": verdicts,
            "passed": all(verdicts.values()),
        }
        if not report["passed"]:
            report["serve_stderr_tail"] = service.stderr()[-3000:]
    _common.emit(report, args.output)
    sys.exit(0 if report["passed"] else 1)


if __name__ == "__main__":
    main()
