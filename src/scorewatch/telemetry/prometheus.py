"""The Prometheus side: the scrape endpoint as an HTTP server of its own or as an ASGI app."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, make_asgi_app, start_http_server

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
_apps: dict[int, ASGIApp] = {}
_apps_lock = threading.Lock()


def set_default_registry(registry: CollectorRegistry | None) -> None:
    """The registry `configure` exports into; `prometheus_asgi_app()` serves it once set."""
    global _default_registry
    _default_registry = registry


def default_registry() -> CollectorRegistry | None:
    return _default_registry


def _app_for(registry: CollectorRegistry) -> ASGIApp:
    key = id(registry)
    app = _apps.get(key)
    if app is None:
        with _apps_lock:
            app = _apps.get(key)
            if app is None:
                app = make_asgi_app(registry)
                _apps[key] = app
    return app


def prometheus_asgi_app(registry: CollectorRegistry | None = None) -> ASGIApp:
    """An ASGI app answering Prometheus scrapes, to mount at `/metrics` in an existing server.

    Without an explicit registry the app serves, at each request, the registry of the active
    `configure()` handle, or prometheus-client's global registry when nothing is configured; so
    it can be mounted before telemetry is configured.
    """

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        chosen = registry or _default_registry or REGISTRY
        await _app_for(chosen)(scope, receive, send)

    return app


def parse_address(address: str | None) -> tuple[str, int]:
    """`"host:port"` (IPv6 as `"[::1]:9464"`) to `(host, port)`; port 0 picks a free port."""
    text = address or DEFAULT_PROMETHEUS_ADDRESS
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port for the Prometheus endpoint, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


class PrometheusServer:
    """prometheus-client's threaded HTTP server on one address, stoppable."""

    def __init__(self, address: str | None, registry: CollectorRegistry) -> None:
        host, port = parse_address(address)
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)
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
