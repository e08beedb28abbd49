"""`[privacy]` with the Redis queue and PostgreSQL: serve enqueues the seeded corpus, a worker
scores it against the loopback judge and stores it in PostgreSQL. The judge's requests hold every
seeded value; the PostgreSQL rows, the Redis keys once the work is done, the answers and the
processes' logs hold none, and the verdict is that of a run without the policy."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis

from privacy_support import (
    GROUND_TRUTH,
    INPUT,
    OUTPUT,
    PRIVACY_TABLE,
    REQUEST_CONTEXT,
    judge_reply,
    judge_saw_everything,
    leaks,
    redis_bytes,
)
from scale_support import (
    PG_DSN,
    REDIS_URL,
    WorkerProcess,
    require_postgres,
    require_redis,
    unique_prefix,
)
from scorewatch.testing import LoopbackJudgeServer
from serve_support import ServeProcess

pytestmark = pytest.mark.e2e

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def prefix() -> Iterator[str]:
    """A Redis key prefix and PostgreSQL schema name of the test's own, removed afterwards."""
    require_redis()
    require_postgres()
    name = unique_prefix().replace("-", "_")
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{name}*"))
    if keys:
        client.delete(*keys)
    client.close()
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        for schema in (name, f"{name}_plain"):
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def _config(directory: Path, stream: str, schema: str, privacy: str) -> Path:
    directory.mkdir(parents=True)
    path = directory / "scorewatch.toml"
    path.write_text(
        '[server]\nlog_level = "debug"\n\n'
        '[[scorers]]\nid = "private"\nfactory = "privacy_support:cli_private_scorer"\n\n'
        f'[sinks]\nsqlite = false\npostgres = "{PG_DSN}"\npostgres_schema = "{schema}"\n\n'
        f'[queue]\nstream = "{stream}"\ngroup = "{stream}-workers"\nclaim_interval = 0.25\n'
        "stats_interval = 0.25\n\n"
        "[telemetry]\nprometheus = false\notlp = false\ncapture_content = true\n\n" + privacy,
        encoding="utf-8",
    )
    return path


def _rows(schema: str) -> list[str]:
    """Every stored row, all columns, as the JSON text PostgreSQL makes of it."""
    with psycopg.connect(PG_DSN) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".mastra_scorers',)).fetchone()
        if exists is None or exists[0] is None:
            return []
        sql = f'SELECT row_to_json(t)::text FROM "{schema}".mastra_scorers t'
        return [row[0] for row in conn.execute(sql.encode()).fetchall()]


def _score_through_the_queue(
    judge: LoopbackJudgeServer, directory: Path, stream: str, schema: str, privacy: str
) -> tuple[list[str], bytes, dict[str, Any]]:
    config = _config(directory, stream, schema, privacy)
    env = {
        "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)]),
        "SCOREWATCH_TEST_API_BASE": judge.base_url,
    }
    worker = WorkerProcess(config, name="w0", env=env)
    logs = b""
    try:
        with ServeProcess(config, env=env, extra_args=("--queue", REDIS_URL)) as serve:
            worker.wait_consuming()
            with httpx.Client(base_url=serve.url, timeout=60) as http:
                accepted = http.post(
                    "/v1/scores",
                    json={
                        "input": INPUT,
                        "output": OUTPUT,
                        "target": "support-bot",
                        "ground_truth": GROUND_TRUTH,
                        "request_context": REQUEST_CONTEXT,
                    },
                )
                assert accepted.status_code == 202, accepted.text
                deadline = time.monotonic() + 90
                while not (rows := _rows(schema)) and time.monotonic() < deadline:
                    time.sleep(0.1)
                listed = http.get("/v1/scores")
            assert serve.terminate() == 0
            logs += serve.stderr_path.read_bytes()
        assert worker.terminate() == 0
    finally:
        worker.kill9()
    logs += worker.stderr_path.read_bytes() + accepted.content + listed.content
    (row,) = listed.json()["scores"]
    return rows, logs, row


def test_queue_workers_and_postgresql_keep_no_personal_data(tmp_path: Path, prefix: str) -> None:
    with LoopbackJudgeServer(judge_reply) as judge:
        rows, logs, listed = _score_through_the_queue(
            judge, tmp_path / "private", f"{prefix}:work", prefix, PRIVACY_TABLE
        )
        judge_saw_everything(judge)
        plain_rows, _, plain = _score_through_the_queue(
            judge, tmp_path / "plain", f"{prefix}:plain", f"{prefix}_plain", ""
        )
    assert len(rows) == 1 and "<EMAIL_1>" in rows[0] and "<CARD_1>" in rows[0]
    for where, data in {"postgresql": rows[0].encode(), "logs and answers": logs}.items():
        assert leaks(data) == [], f"personal data reached the {where}"
    assert leaks(redis_bytes(prefix)) == []  # the scored entry left the stream
    assert listed["status"] == plain["status"] == "success"
    assert listed["score"] == plain["score"] == 1.0
    assert leaks(plain_rows[0].encode()) != []  # without the policy, PostgreSQL holds the data
