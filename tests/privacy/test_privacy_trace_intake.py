"""`scorewatch serve` with `[traces]` and `[privacy]`: an instrumented agent's OTLP trace batch
holds the seeded corpus (the user's message, the model's answer, a tool call's arguments) and
goes through serve's `/v1/traces`, scored in serve (the in-process queue) or by a worker (the
Redis queue) against the loopback judge, with content capture on, OTLP export, /metrics and
debug logs. The judge's requests hold every seeded value; the SQLite rows, the `/v1/scores`
answers, the OTLP protobuf, the Prometheus text, the processes' logs (and the Redis keys once
the work is done) hold none, and the verdicts are those of a run without the policy."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from otlp_receiver import OtlpReceiver
from privacy_support import (
    PRIVACY_TABLE,
    agent_spans,
    judge_reply,
    judge_saw_everything,
    leaks,
    redis_bytes,
)
from scorewatch.testing import LoopbackJudgeServer
from serve_support import ServeProcess, write_config
from trace_intake_support import TOKEN, TracesServe

pytestmark = pytest.mark.e2e

TESTS = Path(__file__).resolve().parents[1]
CONFIG = """\
[server]
log_level = "debug"
auth_token_env = "SW_TRACES_TOKEN"

[[scorers]]
id = "private"
factory = "privacy_support:cli_private_scorer"

[sinks]
sqlite = "scores.db"

[telemetry]
service_name = "scorewatch-privacy-traces"
capture_content = true

[traces]
listen = "127.0.0.1:0"
scorers = ["private"]
assembly_interval = 0.1

[traces.buffer]
quiet_period_s = 0.5
parent_wait_s = 1.0
"""


@dataclass
class Outcome:
    """What one serve (and its worker) kept and exported, and the verdicts it stored."""

    verdicts: list[tuple[str, str, Any]]  # (scorer, span id, score), sorted
    kept: dict[str, bytes]  # where -> every byte found there
    exported: bytes  # the OTLP protobuf the receiver got


@pytest.fixture(scope="module")
def spans() -> list[Any]:
    """The agent's spans holding the corpus (its message, the model's answer, tool arguments)."""
    return agent_spans()


def _sqlite_bytes(directory: Path) -> bytes:
    data = b""
    for name in ("scores.db", "scores.db-wal"):
        path = directory / name
        if path.exists():
            data += path.read_bytes()
    return data


def _verdicts(directory: Path, wanted: int, timeout: float = 90) -> list[tuple[str, str, Any]]:
    deadline = time.monotonic() + timeout
    found: list[tuple[str, str, Any]] = []
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(directory / "scores.db") as db:
                found = sorted(
                    (row[0], row[1], row[2])
                    for row in db.execute("SELECT scorerId, spanId, score FROM mastra_scorers")
                )
        except sqlite3.OperationalError:  # the sink has not made its table yet
            found = []
        if len(found) >= wanted:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{len(found)} of {wanted} rows after {timeout}s")


def _serve_traces(
    directory: Path, judge: LoopbackJudgeServer, spans: list[Any], privacy: str, redis: bool
) -> Outcome:
    """Post the agent's spans to a fresh serve's /v1/traces; wait for its verdict; stop
    everything (flushing every exporter) and collect what was kept and exported."""
    from scale_support import REDIS_URL, WorkerProcess, require_redis, unique_prefix

    stream = ""
    body = CONFIG + privacy
    if redis:
        require_redis()
        stream = unique_prefix()
        body += f'\n[queue]\nstream = "{stream}"\ngroup = "{stream}-workers"\n'
    config = write_config(directory, body, module=False)
    with OtlpReceiver(grpc_enabled=False) as receiver:
        env = {
            "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)]),
            "SCOREWATCH_TEST_API_BASE": judge.base_url,
            "SW_TRACES_TOKEN": TOKEN,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_BLRP_SCHEDULE_DELAY": "100",
        }
        extra = ("--queue", REDIS_URL) if redis else ()
        serve = ServeProcess(config, env=env, extra_args=extra)
        worker = WorkerProcess(config, name="traces-privacy", env=env) if redis else None
        kept: dict[str, bytes] = {}
        try:
            serve.wait_listening()
            if worker is not None:
                worker.wait_consuming()
            traces = TracesServe(serve)
            answer = traces.post_spans(spans)
            assert answer.status_code == 200, answer.text
            verdicts = _verdicts(directory, wanted=1)
            kept["listed"] = traces.client.get(f"{serve.url}/v1/scores").content
            kept["metrics"] = httpx.get(f"{serve.url}/metrics", timeout=60).content
            kept["answer"] = answer.content
            if worker is not None:
                kept["redis"] = redis_bytes(stream)
                assert worker.terminate() == 0
                kept["worker log"] = worker.stderr_path.read_bytes()
            assert serve.terminate() == 0  # flushes every exporter
            kept["serve log"] = serve.stderr_path.read_bytes()
        finally:
            if worker is not None:
                worker.kill9()
                _drop_stream(stream)
            serve.kill()
        exported = b"".join(request.message.SerializeToString() for request in receiver.requests)
    kept["sqlite"] = _sqlite_bytes(directory)
    kept["otlp"] = exported
    return Outcome(verdicts, kept, exported)


def _drop_stream(stream: str) -> None:
    import redis as redis_client

    from scale_support import REDIS_URL

    client = redis_client.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{stream}*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.mark.parametrize("queue", ["in-process", "redis"])
def test_trace_intake_keeps_and_exports_no_personal_data(
    tmp_path: Path, spans: list[Any], queue: str
) -> None:
    redis = queue == "redis"
    with LoopbackJudgeServer(judge_reply) as judge:
        private = _serve_traces(tmp_path / "private", judge, spans, PRIVACY_TABLE, redis)
        judge_saw_everything(judge)
        plain = _serve_traces(tmp_path / "plain", judge, spans, "", redis)
    # The verdicts are those of a run whose stored rows keep the corpus as it was (the span ids
    # are the agent's: the same spans went to both).
    assert private.verdicts == plain.verdicts
    assert [score for _, _, score in private.verdicts] == [1.0]
    # Without the policy, the rows and the exported spans hold the data: the scan finds it.
    assert leaks(plain.kept["sqlite"]) != [] and leaks(plain.exported) != []
    # Content capture was on: the spans did carry the content, redacted.
    assert b"<EMAIL_1>" in private.exported and b"<CARD_1>" in private.exported
    assert b"<EMAIL_1>" in private.kept["sqlite"]
    listed = json.loads(private.kept["listed"])["scores"]
    assert [row["score"] for row in listed] == [1.0]
    for where, data in private.kept.items():
        assert leaks(data) == [], f"personal data reached the {where}"
