"""The Redis work queue under strain, against real serve processes and the real Redis (issue 17,
item 9): a burst of concurrent requests waits for a pooled connection instead of failing, and an
append whose answer is lost is reported as `outcome_unknown` with its run ids, never as
"nothing accepted"."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scale_support import REDIS_HOST, REDIS_PORT, REDIS_URL, require_service, unique_prefix
from serve_support import ServeProcess, write_config

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
    require_service("Redis", REDIS_HOST, REDIS_PORT)
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


class ReplySwallowingProxy:
    """A TCP proxy to Redis that, once `swallow` is set, drops everything Redis answers: the
    commands still reach Redis and run, their replies never arrive."""

    def __init__(self) -> None:
        self.swallow = threading.Event()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ReplySwallowingProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(REDIS_HOST, REDIS_PORT)

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, up: bool) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    if not up and self.swallow.is_set():
                        continue
                    sink.write(data)
                    await sink.drain()

        await asyncio.gather(
            pump(reader, upstream_writer, True), pump(upstream_reader, writer, False)
        )


def test_a_lost_append_answer_is_outcome_unknown_with_the_run_ids(
    tmp_path: Path, stream: str
) -> None:
    with ReplySwallowingProxy() as proxy:
        url = f"redis://127.0.0.1:{proxy.port}/0"
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
