"""The Redis work queue under strain, against real serve processes and the real Redis (issue 17,
items 9 and 15): a burst of concurrent requests waits for a pooled connection instead of
failing; an append whose answer is lost is reported as `outcome_unknown` with its run ids, never
as "nothing accepted"; `/readyz` follows Redis and PostgreSQL going away and coming back;
`serve --check` and `worker` name an unreachable dependency in one line; a judge error that
cannot succeed on retry is dead-lettered on its first delivery."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scale_support import (
    PG_DATABASE,
    PG_DSN,
    PG_HOST,
    PG_PORT,
    REDIS_HOST,
    REDIS_PORT,
    REDIS_URL,
    pg_dsn,
    redis_url,
    require_redis,
    unique_prefix,
)
from scorewatch.testing import HttpError, LoopbackJudgeServer
from serve_support import ServeProcess, run_serve, write_config

pytestmark = pytest.mark.e2e

CONFIG = """\
[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[sinks]
sqlite = "scores.db"

[queue]
url = "{url}"
stream = "{stream}"
group = "{stream}-workers"
max_connections = {connections}
timeout = {timeout}
stats_interval = 0.25

[telemetry]
prometheus = false
otlp = false
"""


@pytest.fixture
def stream() -> Iterator[str]:
    require_redis()
    name = f"{unique_prefix()}:work"
    yield name
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    client.delete(name, f"{name}:dead")
    client.close()


def _stream_run_ids(name: str) -> list[str]:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        return [fields[b"run_id"].decode() for _id, fields in client.xrange(name)]
    finally:
        client.close()


def _pair(index: int) -> dict[str, Any]:
    return {"input": "q", "output": f"answer {index}", "target": "bot", "trace_id": f"t{index}"}


def test_300_concurrent_posts_wait_for_a_pooled_connection(tmp_path: Path, stream: str) -> None:
    path = write_config(
        tmp_path, CONFIG.format(url=REDIS_URL, stream=stream, connections=8, timeout=30)
    )

    async def burst(url: str) -> list[int]:
        limits = httpx.Limits(max_connections=300, max_keepalive_connections=300)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
            answers = await asyncio.gather(
                *(http.post("/v1/scores", json=_pair(index)) for index in range(300))
            )
        return [answer.status_code for answer in answers]

    with ServeProcess(path) as served:
        statuses = asyncio.run(burst(served.url))
        stats = httpx.get(f"{served.url}/v1/stats", timeout=30).json()
    assert statuses.count(202) == 300, {code: statuses.count(code) for code in set(statuses)}
    assert stats["sampled"] == 300 and stats["queue_errors"] == 0
    assert len(_stream_run_ids(stream)) == 300


class FaultyProxy:
    """A TCP proxy to `host:port`. With `swallow` set, it drops everything the server answers
    (commands still reach it and run, their replies never arrive); with `down` set, it closes
    every connection and refuses new ones (the dependency is unreachable)."""

    def __init__(self, host: str, port: int) -> None:
        self.swallow = threading.Event()
        self._target = (host, port)
        self._down = False
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def set_down(self, down: bool) -> None:
        def apply() -> None:
            self._down = down
            if down:
                for writer in list(self._writers):
                    writer.close()

        self._loop.call_soon_threadsafe(apply)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._down:
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        self._writers.update((writer, upstream_writer))

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, up: bool) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    if not up and self.swallow.is_set():
                        continue
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(
            pump(reader, upstream_writer, True), pump(upstream_reader, writer, False)
        )
        self._writers.difference_update((writer, upstream_writer))


def test_a_lost_append_answer_is_outcome_unknown_with_the_run_ids(
    tmp_path: Path, stream: str
) -> None:
    with FaultyProxy(REDIS_HOST, REDIS_PORT) as proxy:
        url = redis_url(port=proxy.port)
        path = write_config(
            tmp_path, CONFIG.format(url=url, stream=stream, connections=4, timeout=1)
        )
        with ServeProcess(path) as served, httpx.Client(base_url=served.url, timeout=60) as http:
            assert http.post("/v1/scores", json=_pair(0)).status_code == 202
            proxy.swallow.set()
            answer = http.post("/v1/scores", json=_pair(1))
            stats = http.get("/v1/stats").json()
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["error"] == "outcome_unknown"
    assert answer.headers["Retry-After"] == str(body["retry_after"])
    runs = body["runs"]
    assert [(run["item"], run["scorer"]) for run in runs] == [(0, "length")]
    # Redis did run the append: the run id the client was given is in the stream.
    assert runs[0]["run_id"] in _stream_run_ids(stream)
    assert stats["outcome_unknown"] == 1 and stats["queue_errors"] == 1


# ------------------------------------------------------------------- dependencies (item 15)

DEPENDENCY_CONFIG = """\
[[scorers]]
id = "judged"
factory = "sw_test_scorers:make_judged_scorer"

[sinks]
sqlite = false
postgres = "{dsn}"
postgres_schema = "{schema}"

[queue]
url = "{url}"
stream = "{stream}"
group = "{stream}-workers"
timeout = 1
stats_interval = 0.25
visibility_timeout = 1
claim_interval = 0.25
max_deliveries = 5

[telemetry]
prometheus = false
otlp = false
"""


def _readyz(url: str) -> tuple[int, dict[str, bool]]:
    answer = httpx.get(f"{url}/readyz", timeout=30)
    return answer.status_code, answer.json()["checks"]


def _wait_readyz(url: str, status: int, timeout: float = 30) -> dict[str, bool]:
    deadline = time.monotonic() + timeout
    while True:
        code, checks = _readyz(url)
        if code == status or time.monotonic() > deadline:
            assert code == status, checks
            return checks
        time.sleep(0.2)


def test_readyz_is_not_ready_while_redis_or_postgres_is_unreachable(
    tmp_path: Path, stream: str, schema: str
) -> None:
    with FaultyProxy(REDIS_HOST, REDIS_PORT) as redis_proxy, FaultyProxy(
        PG_HOST, PG_PORT
    ) as pg_proxy:  # fmt: skip
        body = DEPENDENCY_CONFIG.format(
            dsn=pg_dsn(port=pg_proxy.port),
            schema=schema,
            url=redis_url(port=redis_proxy.port),
            stream=stream,
        )
        path = write_config(tmp_path, body)
        with ServeProcess(path, env={"SW_TEST_JUDGE_BASE": "http://127.0.0.1:9/v1"}) as served:
            checks = _wait_readyz(served.url, 200)
            assert checks["redis"] and checks["sink:postgres"]
            redis_proxy.set_down(True)
            checks = _wait_readyz(served.url, 503)
            assert checks["redis"] is False and checks["sink:postgres"] is True
            redis_proxy.set_down(False)
            _wait_readyz(served.url, 200)
            pg_proxy.set_down(True)
            checks = _wait_readyz(served.url, 503)
            assert checks["redis"] is True and checks["sink:postgres"] is False
            pg_proxy.set_down(False)
            _wait_readyz(served.url, 200)


def test_check_and_worker_name_the_unreachable_dependency_in_one_line(
    tmp_path: Path, stream: str
) -> None:
    body = DEPENDENCY_CONFIG.format(
        dsn=pg_dsn(port=1), schema="unused", url=redis_url(port=2), stream=stream
    )
    path = write_config(tmp_path, body)
    judge_env = {"SW_TEST_JUDGE_BASE": "http://127.0.0.1:9/v1"}
    code, stderr = run_serve(path, "--check", env=judge_env)
    assert code == 1, stderr
    worker = subprocess.run(
        [sys.executable, "-m", "scorewatch", "worker", "--config", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **judge_env},
    )
    assert worker.returncode == 1, worker.stderr
    for command, output in (("serve", stderr), ("worker", worker.stderr)):
        lines = output.strip().splitlines()
        assert len(lines) == 1, output
        assert "Traceback" not in output
        line = lines[0]
        assert line.startswith(f"scorewatch {command}: ")
        assert f"Redis at {redis_url(port=2)} is unreachable" in line
        assert f"PostgreSQL (host={PG_HOST} port=1 dbname={PG_DATABASE}) is unreachable" in line


def test_non_retryable_judge_errors_are_dead_lettered_at_once(
    tmp_path: Path, stream: str, schema: str
) -> None:
    import psycopg
    import redis

    from scale_support import WorkerProcess

    body = DEPENDENCY_CONFIG.format(dsn=PG_DSN, schema=schema, url=REDIS_URL, stream=stream)
    path = write_config(tmp_path, body)
    with LoopbackJudgeServer(default=HttpError(401, "Incorrect API key provided")) as judge:
        env = {"SW_TEST_JUDGE_BASE": judge.base_url}
        with ServeProcess(path, env=env) as served:
            for index in range(3):
                answer = httpx.post(f"{served.url}/v1/scores", json=_pair(index), timeout=30)
                assert answer.status_code == 202
        worker = WorkerProcess(path, name="w401", env=env)
        try:
            worker.wait_consuming()
            client = redis.Redis.from_url(REDIS_URL)
            deadline = time.monotonic() + 60
            while client.xlen(f"{stream}:dead") < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            dead = client.xrange(f"{stream}:dead")
            client.close()
        finally:
            assert worker.terminate() == 0
        calls = judge.request_count
    assert len(dead) == 3
    assert {fields[b"dead.reason"] for _id, fields in dead} == {b"failed"}
    # Each was run once: no redelivery to the limit of 5.
    assert {fields[b"dead.deliveries"] for _id, fields in dead} == {b"1"}
    assert calls == 3
    with psycopg.connect(PG_DSN) as conn:
        rows = conn.execute(
            f'SELECT status, "errorCode" FROM "{schema}".mastra_scorers'.encode()
        ).fetchall()
    assert len(rows) == 3 and {row[0] for row in rows} == {"failed"}
