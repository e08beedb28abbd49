"""The ASGI layer in front of the routes: refuse new work while draining, cap body sizes.

Both checks happen before FastAPI parses anything, so an oversized body is never read past the
limit (a declared `Content-Length` over it is refused without reading at all) and a request
arriving during shutdown costs next to nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .state import ServiceState

__all__ = ["BODY_BYTES_KEY", "ServiceGuard"]

BODY_BYTES_KEY = "scorewatch.body_bytes"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


async def _answer(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    payload = json.dumps(body).encode("utf-8")
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode("ascii")),
    ]
    for name, value in (headers or {}).items():
        raw_headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload})


class ServiceGuard:
    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        settings = self.state.config.server
        if self.state.draining and path.startswith("/v1/"):
            # Read the (bounded) body first: closing a connection with unread data resets it,
            # and the client might never see the answer.
            self.state.rejected_draining += 1
            await _discard_body(receive, settings.max_body_bytes)
            retry = str(settings.retry_after)
            await _answer(
                send,
                503,
                {
                    "error": "shutting_down",
                    "message": "the service is shutting down and accepts no new requests",
                    "retry_after": settings.retry_after,
                },
                {"Retry-After": retry, "Connection": "close"},
            )
            return
        if scope.get("method") not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        if path.startswith("/v1/") and not _is_json(scope):
            # Also what keeps a web page from posting to a token-less service on localhost: a
            # browser cannot send application/json cross-origin without a CORS preflight.
            await _discard_body(receive, settings.max_body_bytes)
            await _answer(
                send,
                415,
                {
                    "error": "unsupported_media_type",
                    "message": "send the body as JSON, with Content-Type: application/json",
                },
            )
            return
        limit = settings.max_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await self._too_large(send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._too_large(send, limit)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        # What an accepted item holds in memory is bounded by its share of the body.
        scope[BODY_BYTES_KEY] = len(body)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send, limit: int) -> None:
        await _answer(
            send,
            413,
            {
                "error": "body_too_large",
                "message": f"request body over the limit of {limit} bytes (server.max_body_bytes)",
            },
            {"Connection": "close"},
        )


async def _discard_body(receive: Receive, limit: int) -> None:
    size = 0
    while size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            media: bytes = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or (
                media.startswith(b"application/") and media.endswith(b"+json")
            )
    return False


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
