"""The Prometheus side: the scrape endpoint as an HTTP server of its own or as an ASGI app.

The metrics come from the OpenTelemetry SDK through `opentelemetry-exporter-prometheus` into a
prometheus-client registry; both endpoints encode it with `exposition.render_text`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from .exposition import CONTENT_TYPE, render_text
from .names import DEFAULT_PROMETHEUS_ADDRESS

__all__ = [
    "PrometheusServer",
    "default_registry",
    "parse_address",
    "prometheus_asgi_app",
    "set_default_registry",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_default_registry: CollectorRegistry | None = None


def set_default_registry(registry: CollectorRegistry | None) -> None:
    """The registry `configure` exports into; `prometheus_asgi_app()` serves it once set."""
    global _default_registry
    _default_registry = registry


def default_registry() -> CollectorRegistry | None:
    return _default_registry


async def _drain(receive: Receive) -> None:
    while True:
        message = await receive()
        if message.get("type") != "http.request" or not message.get("more_body", False):
            return


def prometheus_asgi_app(registry: CollectorRegistry | None = None) -> ASGIApp:
    """An ASGI app answering Prometheus scrapes, to mount at `/metrics` in an existing server.

    Without an explicit registry the app serves, at each request, the registry of the active
    `configure()` handle, or prometheus-client's global registry when nothing is configured; so
    it can be mounted before telemetry is configured.
    """

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            return
        await _drain(receive)
        if scope.get("method", "GET") not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", "text/plain; charset=utf-8")
            return
        chosen = registry or _default_registry or REGISTRY
        # Collecting is CPU work of tens of milliseconds at 10,000 series: off the event loop.
        body = await asyncio.to_thread(render_text, chosen)
        if scope.get("method") == "HEAD":
            body = b""
        await _respond(send, 200, body, CONTENT_TYPE)

    return app


async def _respond(send: Send, status: int, body: bytes, content_type: str) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def parse_address(address: str | None) -> tuple[str, int]:
    """`"host:port"` (IPv6 as `"[::1]:9464"`) to `(host, port)`; port 0 picks a free port."""
    text = address or DEFAULT_PROMETHEUS_ADDRESS
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port for the Prometheus endpoint, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


class _ScrapeServer(ThreadingHTTPServer):
    daemon_threads = True
    registry: CollectorRegistry


class _ScrapeHandler(BaseHTTPRequestHandler):
    server: _ScrapeServer

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        body = render_text(self.server.registry)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        # Prometheus scrapes every few seconds: an access log line each time is noise.
        return


class PrometheusServer:
    """A threaded HTTP server answering scrapes at `/metrics` on one address, stoppable."""

    def __init__(self, address: str | None, registry: CollectorRegistry) -> None:
        host, port = parse_address(address)
        server_class = type(
            "_ScrapeServerForFamily",
            (_ScrapeServer,),
            {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET},
        )
        self._server: _ScrapeServer = server_class((host, port), _ScrapeHandler)
        self._server.registry = registry
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scorewatch-prometheus", daemon=True
        )
        self._thread.start()
        self.host = host
        self.port = int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
