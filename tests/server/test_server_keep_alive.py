"""serve's connections past their keep-alive timeout while the loop is held up.

uvloop runs due timers before it reads sockets that became readable meanwhile: after the loop
was held (a scorer holding the GIL), a keep-alive timeout that fell due meanwhile used to close
a connection on which a request had arrived in time, unread (the close resets the connection
and the client's read fails: the `httpx.ReadError` once seen in the overload test's flood).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from scorewatch.server.config.file import ServeConfig
from scorewatch.server.http.app import build_service, shutdown_service
from scorewatch.server.http.connections import ConnectionBounds

pytestmark = pytest.mark.integration

KEEP_ALIVE_S = 0.3
HOLD_S = 1.0  # the loop held up past the keep-alive timeout


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    headers = [(b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})
    if scope["path"] == "/hold":
        # Held while the loop handles a readable socket, as a scorer holding the GIL holds it
        # anywhere: the sockets that become readable meanwhile are polled only after the
        # timers that fell due meanwhile have run.
        loop = asyncio.get_running_loop()
        readable, writer = socket.socketpair()

        def hold() -> None:
            loop.remove_reader(readable)
            time.sleep(HOLD_S)
            readable.close()
            writer.close()

        loop.add_reader(readable, hold)
        writer.send(b"x")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[int]:
    document = {
        "scorers": [{"id": "similar", "kind": "content-similarity"}],
        "sinks": {"sqlite": str(tmp_path / "scores.db")},
        "telemetry": {"prometheus": False, "otlp": False},
    }
    service = build_service(ServeConfig.from_mapping(document, base_dir=tmp_path))
    bounds = ConnectionBounds(service, max_connections=16, header_timeout=30.0)
    config = uvicorn.Config(
        _app,
        http=bounds.protocol,  # type: ignore[arg-type]  # a factory, as serve passes it
        loop="uvloop",
        lifespan="off",
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_S,  # type: ignore[arg-type]
    )
    server = uvicorn.Server(config)
    listener = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive()
            time.sleep(0.01)
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()
        asyncio.run(shutdown_service(service))


def _get(connection: socket.socket, path: str) -> bytes:
    connection.sendall(f"GET {path} HTTP/1.1\r\nHost: sw\r\n\r\n".encode())
    answer = b""
    while not answer.endswith(b"ok"):
        chunk = connection.recv(4096)
        assert chunk, answer  # closed before the whole answer
        answer += chunk
    return answer


def test_a_request_that_came_in_time_is_answered_after_the_loop_was_held(served: int) -> None:
    with (
        socket.create_connection(("127.0.0.1", served)) as idle,
        socket.create_connection(("127.0.0.1", served)) as holder,
    ):
        assert _get(idle, "/").startswith(b"HTTP/1.1 200")  # its keep-alive timer starts
        assert _get(holder, "/hold").startswith(b"HTTP/1.1 200")  # the loop is held from here
        time.sleep(KEEP_ALIVE_S / 2)
        # Within the keep-alive timeout; the loop reads it only after the timeout fell due.
        assert _get(idle, "/").startswith(b"HTTP/1.1 200")
