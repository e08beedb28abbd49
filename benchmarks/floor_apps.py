"""The floor under serve: the least a server on the same stack must do for the same request.

    .venv/bin/python benchmarks/floor_apps.py scores [--http httptools] [--loop uvloop]
        [--workers 2] [--listen 127.0.0.1:0]
    .venv/bin/python benchmarks/floor_apps.py traces ...

`scores`: read the body of `POST /v1/scores`, validate it with serve's own pydantic model
(`ScoreRequest`) and answer 202 with a small JSON body. `traces`: read the body of
`POST /v1/traces`, decode it as an OTLP `ExportTraceServiceRequest` (protobuf) and answer 200.
Plain ASGI under uvicorn: no framework, no middleware, no telemetry, no queue. With
`--workers N` the socket is bound once and N forked processes accept on it, as serve's workers
do. Prints `floor: listening on http://HOST:PORT` on stderr once serving; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from typing import Any

_ACCEPTED = b'{"accepted":1}'
_EMPTY = b"{}"


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _answer(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def scores_app() -> Any:
    from scorewatch.server.http.models import ScoreRequest

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await _body(receive)
        try:
            ScoreRequest.model_validate_json(body)
        except ValueError:
            await _answer(send, 422, _EMPTY)
            return
        await _answer(send, 202, _ACCEPTED)

    return app


def traces_app() -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await _body(receive)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        await _answer(send, 200, _EMPTY)

    return app


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app", choices=["scores", "traces"])
    parser.add_argument("--http", default="httptools", choices=["httptools", "h11"])
    parser.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--listen", default="127.0.0.1:0")
    args = parser.parse_args()

    import uvicorn

    host, _, port = args.listen.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(2048)
    app = scores_app() if args.app == "scores" else traces_app()
    config = uvicorn.Config(
        app, http=args.http, loop=args.loop, log_level="warning", access_log=False, lifespan="off"
    )
    children: list[int] = []
    for _ in range(args.workers - 1):
        pid = os.fork()
        if pid == 0:
            uvicorn.Server(config).run(sockets=[sock])
            os._exit(0)
        children.append(pid)

    address = sock.getsockname()
    print(f"floor: listening on http://{address[0]}:{address[1]}", file=sys.stderr, flush=True)
    server = uvicorn.Server(config)
    original = server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        for pid in children:
            os.kill(pid, signal.SIGTERM)
        original(sig, frame)

    server.handle_exit = handle_exit  # type: ignore[method-assign]
    server.run(sockets=[sock])
    for pid in children:
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
