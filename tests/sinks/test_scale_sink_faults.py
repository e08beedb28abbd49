"""PostgreSQL refusing rows and PostgreSQL going away, with real processes (issue 17, items 1
and 13): a row the database refuses for a reason of its own becomes an `unstorable` failure and
a dead letter while the worker keeps storing everything else; without a queue, a database
outage is buffered (bounded) and retried, what is finally dropped is counted, and
`GET /v1/scores` answers 503 while the database is down.

The outage is real: serve reaches the real PostgreSQL through a TCP relay that the test cuts
(every connection reset, new ones closed at once) and restores."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis

from scale_support import (
    PG_DSN,
    PG_HOST,
    PG_PORT,
    REDIS_URL,
    WorkerProcess,
    pg_dsn,
    require_postgres,
    require_redis,
    scale_config,
    unique_prefix,
    write_module,
)
from scorewatch.sinks.postgres import PostgresSink
from serve_support import ServeProcess

pytestmark = pytest.mark.e2e


class Relay:
    """A TCP relay to PostgreSQL that can be cut (an outage) and restored."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._down = False
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _address = self._listener.accept()
            except OSError:
                return
            if self._down:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self._down = True
        with self._lock:
            doomed, self._open = self._open, []
        for connection in doomed:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def restore(self) -> None:
        self._down = False

    def close(self) -> None:
        self.cut()
        self._listener.close()


@pytest.fixture
def relay() -> Iterator[Relay]:
    require_postgres()
    proxy = Relay((PG_HOST, PG_PORT))
    yield proxy
    proxy.close()


def stored_ids(schema: str) -> dict[str, tuple[str, str | None]]:
    with psycopg.connect(PG_DSN) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".mastra_scorers',)).fetchone()
        if exists is None or exists[0] is None:
            return {}
        rows = conn.execute(
            f'SELECT id, status, "errorCode" FROM "{schema}".mastra_scorers'.encode()
        ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def wait_for(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def no_queue_config(
    directory: Path, port: int, schema: str, retry_timeout: float, max_queue: int = 2000
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_module(directory)
    dsn = pg_dsn(port=port, connect_timeout="2")
    path = directory / "scorewatch.toml"
    path.write_text(
        '[[scorers]]\nid = "length"\nfactory = "sw_scale_scorers:make_length_scorer"\n\n'
        f"[live]\nmax_concurrency = 4\nmax_queue = {max_queue}\n\n"
        f'[sinks]\nsqlite = false\npostgres = "{dsn}"\npostgres_schema = "{schema}"\n'
        f"retry_timeout = {retry_timeout}\n\n"
        "[telemetry]\nprometheus = false\notlp = false\n",
        encoding="utf-8",
    )
    return path


def post_items(client: httpx.Client, tag: str, count: int) -> list[str]:
    items = [{"input": "q", "output": f"{tag} answer {i}", "target": "bot"} for i in range(count)]
    answer = client.post("/v1/scores:batch", json={"items": items})
    assert answer.status_code == 202, answer.text
    return [a["run_id"] for item in answer.json()["items"] for a in item["accepted"]]


def test_a_database_outage_without_a_queue_is_buffered_retried_and_503_on_read(
    tmp_path: Path, relay: Relay, schema: str
) -> None:
    config = no_queue_config(tmp_path, relay.port, schema, retry_timeout=120, max_queue=150)
    with ServeProcess(config) as serve, httpx.Client(base_url=serve.url, timeout=60) as client:
        before = post_items(client, "before", 20)
        wait_for(lambda: len(stored_ids(schema)) == 20)

        relay.cut()
        during: list[str] = []
        refused = 0
        for batch in range(12):
            items = [
                {"input": "q", "output": f"during {batch}-{i}", "target": "bot"} for i in range(20)
            ]
            answer = client.post("/v1/scores:batch", json={"items": items})
            if answer.status_code == 429:  # the buffer is bounded: the queue is full
                refused += 1
                continue
            assert answer.status_code == 202, answer.text
            during += [a["run_id"] for item in answer.json()["items"] for a in item["accepted"]]
        assert refused > 0 and 140 <= len(during) <= 160
        answer = client.get("/v1/scores")
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"] == "result_store_unavailable"
        assert "Retry-After" in answer.headers
        time.sleep(5)  # an outage long enough for every accepted run to have tried and failed
        assert client.get("/v1/stats").json()["sink_errors"] > 0

        relay.restore()
        total = len(before) + len(during)
        wait_for(lambda: len(stored_ids(schema)) == total, timeout=90)
        stats = client.get("/v1/stats").json()
        assert stats["sink_dropped"] == 0 and stats["rejected_requests"] == refused
        assert stats["scored"] == total and stats["queued"] == 0 and stats["in_flight"] == 0
        assert client.get("/v1/scores", params={"limit": 1000}).json()["count"] == total
        assert set(stored_ids(schema)) == set(before + during)

        # A value JSON cannot carry, stored by another tool: still a 200.
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(
                f'UPDATE "{schema}".mastra_scorers SET score = %s WHERE id = %s'.encode(),
                (float("nan"), before[0]),
            )
        listed = client.get("/v1/scores", params={"limit": 1000})
        assert listed.status_code == 200
        [odd] = [row for row in listed.json()["scores"] if row["id"] == before[0]]
        assert odd["score"] == "NaN"


def test_results_a_database_never_took_back_are_dropped_and_counted(
    tmp_path: Path, relay: Relay, schema: str
) -> None:
    config = no_queue_config(tmp_path, relay.port, schema, retry_timeout=1)
    with ServeProcess(config) as serve, httpx.Client(base_url=serve.url, timeout=60) as client:
        post_items(client, "before", 5)
        wait_for(lambda: len(stored_ids(schema)) == 5)
        relay.cut()
        lost = post_items(client, "during", 12)
        waited = client.post(
            "/v1/scores",
            params={"wait": "true"},
            json={"input": "q", "output": "waiting", "target": "bot"},
        )
        assert waited.status_code == 200, waited.text
        [outcome] = waited.json()["results"]
        assert outcome["status"] == "dropped"  # the truth: scored, but not stored
        lost.append(outcome["run_id"])
        wait_for(lambda: client.get("/v1/stats").json()["in_flight"] == 0)
        stats = client.get("/v1/stats").json()
        relay.restore()
        assert stats["queued"] == 0
        assert stats["sink_dropped"] == 13  # each one counted, none silently
        wait_for(lambda: client.get("/v1/scores").status_code == 200)
    assert not set(lost) & set(stored_ids(schema))


def test_a_row_postgres_refuses_is_dead_lettered_and_never_wedges_the_worker(
    tmp_path: Path, schema: str
) -> None:
    require_redis()
    stream = f"{unique_prefix()}:work"
    import asyncio

    sink = PostgresSink(PG_DSN, schema=schema)
    asyncio.run(sink.migrate())
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(
            f'ALTER TABLE "{schema}".mastra_scorers ADD CONSTRAINT no_poison '
            "CHECK (output::text NOT LIKE '%POISON%')".encode()
        )
    config = scale_config(
        tmp_path,
        stream=stream,
        schema=schema,
        factories={"length": "make_length_scorer"},
        max_concurrency=2,
    )
    worker = WorkerProcess(config, name="w1", extra_args=("--concurrency", "2"))
    try:
        with ServeProcess(config, extra_args=("--queue", REDIS_URL)) as serve:
            worker.wait_consuming()
            with httpx.Client(base_url=serve.url, timeout=30) as client:
                poison = [
                    {"input": "q", "output": f"POISON {i}", "target": "bot"} for i in range(4)
                ]
                nasty = {
                    "input": "q\u0000\ud800",
                    "output": "nul \u0000 and \udfff",
                    "target": "bot",
                }
                good = [{"input": "q", "output": f"good {i}", "target": "bot"} for i in range(30)]
                # As a client sends them: JSON escapes (ASCII), lone surrogates included.
                document = json.dumps({"items": [*poison, nasty, *good]}, ensure_ascii=True)
                answer = client.post(
                    "/v1/scores:batch",
                    content=document.encode(),
                    headers={"Content-Type": "application/json"},
                )
                assert answer.status_code == 202, answer.text
                ids = [a["run_id"] for item in answer.json()["items"] for a in item["accepted"]]
            # More bad rows than the worker has slots: they would wedge it if retried forever.
            wait_for(lambda: len(stored_ids(schema)) == 35, timeout=60)
            rows = stored_ids(schema)
            assert [rows[i] for i in ids[:4]] == [("failed", "unstorable")] * 4
            assert all(rows[i] == ("success", None) for i in ids[4:])
            assert serve.terminate() == 0
        assert worker.terminate() == 0
        account = worker.final_accounting()
        assert account["dead_lettered"] == 4 and account["sink_refused"] == 4
        assert account["scored"] == 31
        client_redis = redis.Redis.from_url(REDIS_URL)
        try:
            dead = client_redis.xrange(f"{stream}:dead")
            assert sorted(fields[b"dead.reason"] for _id, fields in dead) == [b"unstorable"] * 4
        finally:
            keys = list(client_redis.scan_iter(match=f"{stream.split(':')[0]}*"))
            if keys:
                client_redis.delete(*keys)
            client_redis.close()
    finally:
        worker.kill9()
