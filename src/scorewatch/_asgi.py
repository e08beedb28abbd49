"""The ASGI interface's types, named once for the servers scorewatch mounts: serve's middleware
and listeners, and the Prometheus endpoint that telemetry serves inside any ASGI application."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["ASGIApp", "Message", "Receive", "Scope", "Send"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
