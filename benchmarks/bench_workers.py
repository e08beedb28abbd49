"""Throughput of `scorewatch worker` processes as they are added: 1 -> 3 workers.

    .venv/bin/python benchmarks/bench_workers.py [--items 120] [--concurrency 2] [--repeats 3]

Needs the real Redis and PostgreSQL, and uses only the databases the tests use:
`SCOREWATCH_TEST_REDIS_URL` and `SCOREWATCH_TEST_PG_DSN` (tests/service_databases.py). For each
worker count, a fresh stream and schema: the workers start and report they are consuming, the
items are appended to the stream in one go, and the clock runs until every result row is in
PostgreSQL. Each run makes one call to a loopback judge that answers after `--latency` seconds,
so one worker's ceiling is `concurrency / latency` evaluations per second (the single-process
limit the queue exists to lift). Prints one JSON object; `speedup` is 3 workers over 1
(min/median/max over `--repeats` pairs of runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import psycopg
import redis

import scorewatch as sw
from scorewatch.core.call import AgentCall
from scorewatch.live import LiveScorerEntry, Sampling
from scorewatch.server.intake.interface import ScoreItem
from scorewatch.server.intake.redis_queue import RedisIntake
from scorewatch.server.queue.stream import StreamNames, connect
from scorewatch.testing import LoopbackJudgeServer, Reply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from service_databases import PG_DSN, REDIS_URL, ensure_pg_database

SCORERS = textwrap.dedent(
    """
    import os

    import scorewatch as sw


    def make_judged_scorer():
        judge = sw.JudgeConfig(
            model="openai/loopback-judge",
            instructions="You rate answers from 0 to 1.",
            model_options={
                "api_base": os.environ["SW_BENCH_JUDGE_BASE"],
                "api_key": "sk-bench",
                "max_retries": 0,
                "timeout": 30,
            },
        )
        scorer = sw.create_scorer(id="judged", description="One judge call", judge=judge)
        return scorer.generate_score(
            sw.PromptStep("rate the output", lambda ctx: f"Rate this answer: {ctx.run.output}")
        )
    """
)


def _config(directory: Path, stream: str, schema: str) -> Path:
    (directory / "sw_bench_scorers.py").write_text(SCORERS, encoding="utf-8")
    path = directory / "scorewatch.toml"
    path.write_text(
        '[[scorers]]\nid = "judged"\nfactory = "sw_bench_scorers:make_judged_scorer"\n\n'
        f'[sinks]\nsqlite = false\npostgres = "{PG_DSN}"\npostgres_schema = "{schema}"\n\n'
        f'[queue]\nstream = "{stream}"\ngroup = "{stream}-workers"\nclaim_interval = 1\n\n'
        "[telemetry]\nprometheus = false\notlp = false\n",
        encoding="utf-8",
    )
    return path


async def _enqueue(stream: str, count: int, label: str) -> None:
    scorer = sw.create_scorer(id="judged", description="placeholder").generate_score(lambda c: 1)
    intake = RedisIntake(
        {"judged": LiveScorerEntry(scorer, sampling=Sampling.none())},
        client=connect(REDIS_URL),
        names=StreamNames(stream, f"{stream}-workers", f"{stream}:dead"),
        max_backlog=1_000_000,
    )
    try:
        await intake.admit(
            [
                ScoreItem(AgentCall(input="q", output=f"{label} {i}", target="bench"))
                for i in range(count)
            ]
        )
    finally:
        await intake.aclose()


def _count_rows(schema: str) -> int:
    with psycopg.connect(PG_DSN) as conn:
        found = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".mastra_scorers',)).fetchone()
        if found is None or found[0] is None:
            return 0
        row = conn.execute(f'SELECT count(*) FROM "{schema}".mastra_scorers'.encode()).fetchone()
        return int(row[0]) if row else 0


def _run(workers: int, items: int, concurrency: int, judge_base: str) -> dict[str, Any]:
    prefix = f"swbench-{uuid.uuid4().hex[:10]}"
    stream, schema = f"{prefix}:work", prefix.replace("-", "_")
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as folder:
        config = _config(Path(folder), stream, schema)
        env = dict(os.environ, SW_BENCH_JUDGE_BASE=judge_base)
        try:
            logs = []
            for index in range(workers):
                log = Path(folder) / f"worker-{index}.log"
                logs.append(log)
                processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "scorewatch",
                            "worker",
                            "--config",
                            str(config),
                            "--queue",
                            REDIS_URL,
                            "--concurrency",
                            str(concurrency),
                            "--consumer",
                            f"bench-{index}",
                        ],
                        cwd=folder,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=log.open("wb"),
                    )
                )
            deadline = time.monotonic() + 120
            while not all("consuming" in log.read_text() for log in logs):
                if time.monotonic() > deadline:
                    raise RuntimeError("workers did not start")
                time.sleep(0.05)
            # Warm-up (connections, first calls), not timed.
            warm_up = workers * concurrency * 2
            asyncio.run(_enqueue(stream, warm_up, "warm-up"))
            while _count_rows(schema) < warm_up:
                time.sleep(0.05)
            started = time.perf_counter()
            asyncio.run(_enqueue(stream, items, "timed"))
            client = redis.Redis.from_url(REDIS_URL)
            while _count_rows(schema) < warm_up + items:
                if time.perf_counter() - started > 600:
                    raise RuntimeError("the items were not all scored")
                if client.xpending(stream, f"{stream}-workers")["pending"] and any(
                    "will retry" in log.read_text() for log in logs
                ):
                    raise RuntimeError(f"runs are failing:\n{logs[0].read_text()[-2000:]}")
                time.sleep(0.05)
            elapsed = time.perf_counter() - started
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(60)
            client = redis.Redis.from_url(REDIS_URL)
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()
            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())
    return {
        "workers": workers,
        "items": items,
        "seconds": round(elapsed, 3),
        "evaluations_per_s": round(items / elapsed, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=2, help="runs at once per worker")
    parser.add_argument("--latency", type=float, default=0.2, help="judge latency, seconds")
    parser.add_argument("--repeats", type=int, default=1, help="1-then-3 measurements")
    args = parser.parse_args()
    ensure_pg_database()
    reply = Reply('{"score": 0.7}', delay=args.latency)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    with LoopbackJudgeServer(default=reply, record_requests=False) as judge:
        for _ in range(args.repeats):
            one = _run(1, args.items, args.concurrency, judge.base_url)
            three = _run(3, args.items, args.concurrency, judge.base_url)
            pairs.append((one, three))
    speedups = sorted(t["evaluations_per_s"] / o["evaluations_per_s"] for o, t in pairs)
    print(
        json.dumps(
            {
                "judge_latency_s": args.latency,
                "concurrency_per_worker": args.concurrency,
                "ceiling_per_worker": round(args.concurrency / args.latency, 2),
                "runs": [run for pair in pairs for run in pair],
                "speedup": {
                    "min": round(speedups[0], 2),
                    "median": round(speedups[len(speedups) // 2], 2),
                    "max": round(speedups[-1], 2),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
