"""The optional second listener of `[traces] listen`: the same application, only `/v1/traces`.

A Collector's `otlphttp` exporter appends `/v1/traces` to its endpoint, so pointing it at
`http://host:4318` works unchanged. The listener is one more socket of the same uvicorn server
(same guard, same token, same shutdown); requests arriving on it for any other path get 404.
"""

from __future__ import annotations

import json
import socket

from ..._asgi import ASGIApp, Receive, Scope, Send
from ..config.traces_settings import TRACES_PATH

__all__ = ["TracesOnly"]


_NOT_HERE = json.dumps(
    {"error": "not_found", "message": f"this listener serves only POST {TRACES_PATH}"}
).encode("utf-8")


class TracesOnly:
    """Serves `app` on every socket; on the one bound to `sock`, only `/v1/traces`."""

    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        self.app = app
        self.port = int(sock.getsockname()[1])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if (
            scope["type"] == "http"
            and server is not None
            and server[1] == self.port
            and scope.get("path") != TRACES_PATH
        ):
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(_NOT_HERE)).encode("ascii")),
            ]
            await send({"type": "http.response.start", "status": 404, "headers": headers})
            await send({"type": "http.response.body", "body": _NOT_HERE})
            return
        await self.app(scope, receive, send)
