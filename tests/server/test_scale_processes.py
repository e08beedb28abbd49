"""Scale-out with real processes: `scorewatch serve --queue` and `scorewatch worker` processes
on the real Redis and PostgreSQL on loopback. Every accepted item is scored exactly once across
three workers; a worker killed with SIGKILL mid-batch loses nothing; a serve killed right after
its 202 loses nothing."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis

import scorewatch as sw
from scale_support import (
    PG_DSN,
    REDIS_URL,
    WorkerProcess,
    redis_url,
    require_postgres,
    require_redis,
    scale_config,
    unique_prefix,
)
from scorewatch.core.call import AgentCall
from scorewatch.live import LiveScorerEntry, Sampling
from scorewatch.server.intake.interface import ScoreItem
from scorewatch.server.intake.redis_queue import RedisIntake
from scorewatch.server.queue.stream import StreamNames, connect
from serve_support import ServeProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    """(stream key, PostgreSQL schema), unique to this test; removed afterwards."""
    require_redis()
    require_postgres()
    prefix = unique_prefix()
    schema = prefix.replace("-", "_")
    yield f"{prefix}:work", schema
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def _rows(schema: str) -> list[tuple[str, str, float | None]]:
    """(id, status, score) of every stored row; empty before the first worker created the table."""
    with psycopg.connect(PG_DSN) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".mastra_scorers',)).fetchone()
        if exists is None or exists[0] is None:
            return []
        return conn.execute(
            f'SELECT id, status, score FROM "{schema}".mastra_scorers'.encode()
        ).fetchall()


def _wait_rows(schema: str, count: int, timeout: float = 90.0) -> list[tuple[str, str, Any]]:
    deadline = time.monotonic() + timeout
    rows: list[tuple[str, str, Any]] = []
    while time.monotonic() < deadline:
        rows = _rows(schema)
        if len(rows) >= count:
            return rows
        time.sleep(0.1)
    raise AssertionError(f"{len(rows)} of {count} rows after {timeout}s")


def _stream_state(stream: str, group: str) -> tuple[int, int]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        pending = client.xpending(stream, group)["pending"]
        return int(client.xlen(stream)), int(pending)
    finally:
        client.close()


def test_every_accepted_item_is_scored_exactly_once_across_three_workers(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    stream, schema = names
    config = scale_config(
        tmp_path,
        stream=stream,
        schema=schema,
        factories={"length": "make_length_scorer"},
        # Nothing here is meant to be reclaimed: on a loaded machine a worker may hold an entry
        # past 1 s, and another would score it again.
        visibility_timeout=5.0,
    )
    workers = [WorkerProcess(config, name=f"w{i}") for i in range(3)]
    with ServeProcess(config, extra_args=("--queue", REDIS_URL)) as serve:
        for worker in workers:
            worker.wait_consuming()
        accepted: list[str] = []
        with httpx.Client(base_url=serve.url, timeout=30) as client:
            for batch in range(3):
                items = [
                    {"input": "q", "output": f"answer {batch}-{i}", "target": "bot"}
                    for i in range(100)
                ]
                answer = client.post("/v1/scores:batch", json={"items": items})
                assert answer.status_code == 202, answer.text
                accepted += [
                    a["run_id"] for item in answer.json()["items"] for a in item["accepted"]
                ]
            rows = _wait_rows(schema, len(accepted))
            listed = client.get("/v1/scores", params={"limit": 1000}).json()
            stats = client.get("/v1/stats")
            assert stats.status_code == 200, stats.text
            assert stats.json()["sampled"] == 300 and stats.json()["rejected_requests"] == 0
            assert client.get("/readyz").json()["checks"]["queue"] is True
        assert len(accepted) == len(set(accepted)) == 300
        assert sorted(row[0] for row in rows) == sorted(accepted)
        assert all(status == "success" for _id, status, _score in rows)
        assert listed["count"] == 300  # serve reads the shared PostgreSQL sink
        assert serve.terminate() == 0
    for worker in workers:
        assert worker.terminate() == 0
    accounts = [worker.final_accounting() for worker in workers]
    # Exactly once: the workers together scored and acknowledged each entry one time.
    assert sum(a["scored"] for a in accounts) == 300
    assert sum(a["acknowledged"] for a in accounts) == 300
    assert sum(a["dead_lettered"] for a in accounts) == 0
    assert _stream_state(stream, f"{stream}-workers") == (0, 0)


async def _enqueue(stream: str, scorer_id: str, count: int) -> list[str]:
    scorer = sw.create_scorer(id=scorer_id, description="placeholder").generate_score(lambda c: 1.0)
    intake = RedisIntake(
        {scorer_id: LiveScorerEntry(scorer, sampling=Sampling.none())},
        client=connect(REDIS_URL),
        names=StreamNames(stream, f"{stream}-workers", f"{stream}:dead"),
        max_backlog=10_000,
    )
    try:
        items = [
            ScoreItem(AgentCall(input="q", output=f"answer {i}", target="bot"))
            for i in range(count)
        ]
        admissions = await intake.admit(items)
        return [a.accepted[0].run_id for a in admissions]
    finally:
        await intake.aclose()


def test_worker_killed_mid_batch_loses_nothing_and_duplicates_nothing(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    stream, schema = names
    config = scale_config(
        tmp_path,
        stream=stream,
        schema=schema,
        factories={"slow": "make_slow_scorer"},
        visibility_timeout=1.0,
        max_concurrency=8,
    )
    accepted = asyncio.run(_enqueue(stream, "slow", 80))
    doomed = WorkerProcess(config, name="doomed", env={"SW_SLOW_SCORER_S": "0.5"})
    doomed.wait_consuming()
    _wait_rows(schema, 4)
    backlog, pending = _stream_state(stream, f"{stream}-workers")
    doomed.kill9()
    assert 0 < pending <= 8 and backlog > pending  # killed with a batch in its hands
    survivor = WorkerProcess(config, name="survivor", env={"SW_SLOW_SCORER_S": "0.05"})
    survivor.wait_consuming()
    rows = _wait_rows(schema, 80)
    assert survivor.terminate() == 0
    assert sorted(row[0] for row in rows) == sorted(accepted)
    assert len(_rows(schema)) == 80  # one row per run, redelivered ones included
    account = survivor.final_accounting()
    assert account["redelivered"] >= 1  # the dead worker's pending entries were reclaimed
    assert account["dead_lettered"] == 0
    assert _stream_state(stream, f"{stream}-workers") == (0, 0)


def test_serve_killed_right_after_202_still_gets_the_item_scored(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    stream, schema = names
    config = scale_config(
        tmp_path, stream=stream, schema=schema, factories={"length": "make_length_scorer"}
    )
    serve = ServeProcess(config, extra_args=("--queue", REDIS_URL))
    serve.wait_listening()
    answer = httpx.post(
        f"{serve.url}/v1/scores",
        json={"input": "q", "output": "accepted then orphaned", "target": "bot"},
        timeout=30,
    )
    serve.kill()  # SIGKILL, no drain: only Redis holds the work now
    assert answer.status_code == 202, answer.text
    (run,) = answer.json()["accepted"]
    worker = WorkerProcess(config, name="later", extra_args=("--metrics-listen", "127.0.0.1:0"))
    worker.wait_consuming()
    rows = _wait_rows(schema, 1)
    assert [(row[0], row[1]) for row in rows] == [(run["run_id"], "success")]
    # The worker's own /metrics: the run it scored and the stream's gauges.
    port = re.search(r"metrics on port (\d+)", worker.stderr())
    assert port, worker.stderr()
    label = f'scorewatch_queue_stream="{stream}"'
    deadline = time.monotonic() + 30
    while True:
        text = httpx.get(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=10).text
        if f"scorewatch_queue_backlog{{{label}}} 0" in text or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert f"scorewatch_queue_backlog{{{label}}} 0" in text
    assert f"scorewatch_queue_pending{{{label}}} 0" in text
    assert 'scorewatch_scorer_runs_total{gen_ai_evaluation_name="length"' in text
    assert worker.terminate() == 0


def test_worker_without_a_queue_and_serve_with_a_bad_queue_url_refuse_to_start(
    tmp_path: Path,
) -> None:
    config = scale_config(
        tmp_path, stream="unused", schema="unused", factories={"length": "make_length_scorer"}
    )
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    worker = subprocess.run(
        [sys.executable, "-m", "scorewatch", "worker", "--config", str(config)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert worker.returncode == 2
    assert "no work queue" in worker.stderr
    serve = subprocess.run(
        [sys.executable, "-m", "scorewatch", "serve", "--config", str(config), "--check",
         "--queue", redis_url().replace("redis://", "http://")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert serve.returncode == 2
    assert "--queue: expected redis://HOST:PORT/DB" in serve.stderr


def test_sigterm_finishes_the_runs_in_flight_and_leaves_the_rest_queued(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    stream, schema = names
    config = scale_config(
        tmp_path,
        stream=stream,
        schema=schema,
        factories={"slow": "make_slow_scorer"},
        max_concurrency=4,
        visibility_timeout=30.0,  # nothing may be reclaimed: the numbers must add up as they are
    )
    accepted = asyncio.run(_enqueue(stream, "slow", 20))
    first = WorkerProcess(config, name="first", env={"SW_SLOW_SCORER_S": "0.6"})
    first.wait_consuming()
    _wait_rows(schema, 1)
    assert first.terminate() == 0
    account = first.final_accounting()
    stored = _rows(schema)
    # Every run it had started was finished, stored and acknowledged before it exited...
    assert account["in_flight"] == 0
    assert account["scored"] == account["acknowledged"] == len(stored) < 20
    backlog, pending = _stream_state(stream, f"{stream}-workers")
    # ... and the rest is still queued, unclaimed, for the next worker.
    assert (backlog, pending) == (20 - len(stored), 0)
    second = WorkerProcess(config, name="second", env={"SW_SLOW_SCORER_S": "0.01"})
    second.wait_consuming()
    rows = _wait_rows(schema, 20)
    assert second.terminate() == 0
    assert sorted(row[0] for row in rows) == sorted(accepted)
