"""How the workers of `serve --workers N` answer for each other (see `workers.py`).

Every worker also listens on a private Unix socket in the supervisor's run directory (mode
0700, the service user's alone), where `PeerEndpoint` answers its siblings with what is this
process's only: `/_peer/metrics` (its registry, OpenMetrics, exemplars included) and
`/_peer/readyz` (its readiness checks). Requests on the public port never reach these paths.
`PeerClient` asks the siblings: the metrics from the scrape's collection thread, the readiness
from the event loop.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
from pathlib import Path

from ..._asgi import ASGIApp, Receive, Scope, Send
from ...telemetry.exposition import OPENMETRICS_CONTENT_TYPE, render_openmetrics
from .state import ServiceState

__all__ = ["PeerClient", "PeerEndpoint", "PeerUnavailableError"]

_METRICS = "/_peer/metrics"
_READYZ = "/_peer/readyz"
# A sibling busy with its own traffic still answers within this; a hung one fails the scrape.
_TIMEOUT_S = 5.0


class PeerUnavailableError(RuntimeError):
    """A sibling worker did not answer."""


class PeerEndpoint:
    """`app` on the public sockets; the `/_peer/*` answers on the private Unix socket `path`."""

    def __init__(self, app: ASGIApp, service: ServiceState, path: Path) -> None:
        self.app = app
        self.service = service
        # What uvicorn gives as the `server` of a request on that socket.
        self._server = (str(path), None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] != "http" or server is None or tuple(server) != self._server:
            await self.app(scope, receive, send)
            return
        path = scope.get("path")
        if path == _METRICS:
            from ...telemetry import prometheus

            registry = prometheus.default_registry()
            body = b"# EOF\n"
            if registry is not None:
                body = await asyncio.to_thread(render_openmetrics, registry)
            await _answer(send, 200, body, OPENMETRICS_CONTENT_TYPE)
        elif path == _READYZ:
            from .routes.probes import readiness_checks

            checks = await readiness_checks(self.service)
            await _answer(send, 200, json.dumps(checks).encode(), "application/json")
        else:
            await _answer(send, 404, b"not found\n", "text/plain")


async def _answer(send: Send, status: int, body: bytes, content_type: str) -> None:
    headers = [
        (b"content-type", content_type.encode("latin-1")),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=_TIMEOUT_S)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(str(self._path))
        self.sock = sock


class PeerClient:
    """The sibling workers, by index."""

    def __init__(self, siblings: dict[int, Path]) -> None:
        self.siblings = dict(siblings)

    def metrics_texts(self) -> list[str]:
        """Every sibling's registry as OpenMetrics text (blocking: call it off the loop)."""
        texts = []
        for index, path in sorted(self.siblings.items()):
            connection = _UnixConnection(path)
            try:
                connection.request("GET", _METRICS, headers={"Accept": OPENMETRICS_CONTENT_TYPE})
                response = connection.getresponse()
                body = response.read()
                if response.status != 200:
                    raise PeerUnavailableError(f"worker {index} answered {response.status}")
            except OSError as error:
                raise PeerUnavailableError(f"worker {index}: {error}") from error
            finally:
                connection.close()
            texts.append(body.decode("utf-8"))
        return texts

    async def readiness(self) -> dict[str, bool]:
        """`worker:<n>`: whether each sibling is ready (one that does not answer is not)."""
        indexes = sorted(self.siblings)
        answers = await asyncio.gather(*(self._ready(self.siblings[i]) for i in indexes))
        return {f"worker:{i}": ready for i, ready in zip(indexes, answers, strict=True)}

    async def _ready(self, path: Path) -> bool:
        try:
            async with asyncio.timeout(_TIMEOUT_S):
                reader, writer = await asyncio.open_unix_connection(str(path))
                try:
                    writer.write(
                        f"GET {_READYZ} HTTP/1.1\r\nHost: localhost\r\n"
                        "Connection: close\r\n\r\n".encode("ascii")
                    )
                    await writer.drain()
                    raw = await reader.read()
                finally:
                    writer.close()
        except (OSError, TimeoutError):
            return False
        head, _, body = raw.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            return False
        try:
            checks = json.loads(body)
        except ValueError:
            return False
        return isinstance(checks, dict) and bool(checks) and all(checks.values())
