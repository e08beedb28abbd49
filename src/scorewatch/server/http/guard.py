"""The ASGI layer in front of the routes: check the bearer token, refuse new work while
draining, bound request bodies in size and time; answer the plain `POST /v1/scores` itself.

All of it happens before FastAPI parses anything. The token of a `/v1/*` request is checked
before a byte of its body is read (a client without it is answered 401 and disconnected); a
body is never read past `server.max_body_bytes` (a declared `Content-Length` over it is refused
without reading at all) nor for longer than `server.body_timeout` (then 408); a request arriving
during shutdown costs next to nothing. A `POST /v1/scores` without a query string is handed,
body read, to `plain_score` (`routes/score_intake.py`), which answers it without FastAPI's layers
or leaves it to the route.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final

from ..._asgi import ASGIApp, Message, Receive, Scope, Send
from ...sinks.storable import json_encoder
from ..config.traces_settings import TRACES_PATH
from .auth import authorization_problem
from .body import BodyReader, TooLarge, TooSlow
from .state import ServiceState

__all__ = [
    "BODY_BYTES_KEY",
    "MAX_JSON_DEPTH",
    "SCORE_PATHS",
    "PlainScore",
    "ServiceGuard",
    "json_answer",
    "json_problem",
    "send_answer",
    "send_json",
    "shed_answer",
]

BODY_BYTES_KEY = "scorewatch.body_bytes"
# Arrays and objects nested deeper than this are refused (422): far beyond what agents send,
# well within what every parser, sink and serializer on the way handles.
MAX_JSON_DEPTH = 128


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_SCORE_PATH = "/v1/scores"
SCORE_PATHS = frozenset({_SCORE_PATH, "/v1/scores:batch"})


def shed_answer(state: ServiceState) -> dict[str, Any] | None:
    """The 429 body of a score request refused unread, when the intake sheds (the queue is past
    its delay, or the loop reading requests is behind), else None. The connection's protocol
    asks before parsing a request, this guard before reading its body: one answer either way."""
    shed = state.intake.refuse_early()
    if shed is None:
        return None
    wait = min(max(shed, state.config.server.retry_after), 60)
    return {
        "error": "queue_full",
        "message": "the service is past what it can finish now (more work queued than it "
        "finishes in live.max_queue_delay, or requests arriving faster than it reads them); "
        f"retry after {wait}s",
        "retry_after": wait,
    }


# `json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))`,
# Starlette's, from one encoder made once (`json.dumps` makes one per call given options). The
# answers are trees this module's callers build, never holding themselves.
_answer_json: Final = json_encoder(separators=(",", ":"), allow_nan=False, default=None)


def json_answer(
    content: Any, headers: dict[str, str] | None = None
) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    """`content` as JSON and the answer's headers, in the bytes Starlette's `JSONResponse`
    sends (`send_answer` sends them)."""
    body = _answer_json(content).encode("utf-8")
    raw = [
        (b"content-length", str(len(body)).encode("ascii")),
        (b"content-type", b"application/json"),
    ]
    for name, value in (headers or {}).items():
        raw.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    return body, tuple(raw)


async def send_answer(
    send: Send, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...]
) -> None:
    """Send an answer `json_answer` made (the messages are new each time: a middleware around
    the application may change them)."""
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})


async def send_json(
    send: Send, status: int, content: Any, headers: dict[str, str] | None = None
) -> None:
    """Answer `content` as JSON with `status`, in the bytes Starlette's `JSONResponse` sends."""
    body, raw = json_answer(content, headers)
    await send_answer(send, status, body, raw)


PlainScore = Callable[[ServiceState, bytes, Send], Awaitable[bool]]
"""Answers a plain `POST /v1/scores` given its body, or returns False to leave it to the app
(`routes.score_intake.answer_plain_score`)."""


class ServiceGuard:
    def __init__(
        self, app: ASGIApp, state: ServiceState, plain_score: PlainScore | None = None
    ) -> None:
        self.app = app
        self.state = state
        self.plain_score = plain_score
        settings = state.config.server
        self._reader = BodyReader(settings.max_body_bytes, settings.body_timeout)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        settings = self.state.config.server
        api = path.startswith("/v1/")
        if api and self.state.token is not None:
            # Before anything is read: an unauthenticated client costs no body buffer and no
            # wait, and its connection is closed rather than drained.
            problem = authorization_problem(self.state.token, _header(scope, b"authorization"))
            if problem is not None:
                await send_json(
                    send,
                    401,
                    {"error": "unauthorized", "message": problem},
                    {"WWW-Authenticate": "Bearer", "Connection": "close"},
                )
                return
        reader = self._reader
        if self.state.draining and api:
            # Read the (bounded) body first: closing a connection with unread data resets it,
            # and the client might never see the answer.
            self.state.rejected_draining += 1
            await reader.discard(receive)
            retry = str(settings.retry_after)
            await send_json(
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
        content_type, declared = _body_headers(scope)
        if path in SCORE_PATHS:
            shed = shed_answer(self.state)
            if shed is not None:
                await reader.discard(receive)
                await send_json(send, 429, shed, {"Retry-After": str(shed["retry_after"])})
                return
        # OTLP trace exports are protobuf or JSON, maybe gzipped: their route reads them.
        otlp = path == TRACES_PATH
        if api and not otlp and (content_type is None or not _says_json(content_type)):
            # Also what keeps a web page from posting to a token-less service on localhost: a
            # browser cannot send application/json cross-origin without a CORS preflight.
            await reader.discard(receive)
            await send_json(
                send,
                415,
                {
                    "error": "unsupported_media_type",
                    "message": "send the body as JSON, with Content-Type: application/json",
                },
            )
            return
        limit = settings.max_body_bytes
        if declared is not None and declared > limit:
            await self._too_large(send, limit)
            return
        try:
            body = await reader.read(receive)
        except TooLarge:
            await self._too_large(send, limit)
            return
        except TooSlow:
            await send_json(
                send,
                408,
                {
                    "error": "body_timeout",
                    "message": f"the request body did not arrive within {settings.body_timeout:g}"
                    " s (server.body_timeout)",
                },
                {"Connection": "close"},
            )
            return
        if body is None:  # the client went away
            return
        if api and not otlp:
            problem = json_problem(body)
            if problem is not None:
                await send_json(
                    send,
                    422,
                    {
                        "error": "invalid_request",
                        "message": f"body: {problem}",
                        "fields": [{"field": "body", "message": problem}],
                    },
                )
                return
        if (
            path == _SCORE_PATH
            and self.plain_score is not None
            and scope["method"] == "POST"
            and not scope.get("query_string")
            and await self.plain_score(self.state, body, send)
        ):
            return
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
        await send_json(
            send,
            413,
            {
                "error": "body_too_large",
                "message": f"request body over the limit of {limit} bytes (server.max_body_bytes)",
            },
            {"Connection": "close"},
        )


def json_problem(body: bytes) -> str | None:
    """Why a JSON body is refused before parsing (invalid UTF-8, nested too deep), or None."""
    if not body.isascii():  # ASCII is UTF-8; only the rest is decoded to find out
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as error:
            return f"invalid JSON: not valid UTF-8 (at byte {error.start})"
    # Fewer brackets than the limit cannot nest deeper than it: most bodies are not walked.
    if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH and _nested_deeper_than(
        body, MAX_JSON_DEPTH
    ):
        return f"invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels"
    return None


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(code for code in range(256) if code not in b"[]{}")


def _nested_deeper_than(body: bytes, limit: int) -> bool:
    """True when arrays and objects nest deeper than `limit` (malformed JSON is left to the
    parser), for a body with more than `limit` brackets (`json_problem` counts them). Byte-string
    operations only, so a megabyte of brackets costs milliseconds."""
    shape = _JSON_STRING.sub(b"", body).translate(_BRACKETS, _NOT_BRACKETS)
    too_deep = b"[" * (limit + 1)
    for _ in range(limit):  # each pass removes the innermost level
        if too_deep in shape:
            return True
        shorter = shape.replace(b"[]", b"")
        if len(shorter) == len(shape):
            return False
        shape = shorter
    return b"[]" in shape


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return None


def _body_headers(scope: Scope) -> tuple[bytes | None, int | None]:
    """The first Content-Type and Content-Length (None when absent or not a number)."""
    content_type: bytes | None = None
    length: bytes | None = None
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            if content_type is None:
                content_type = value
        elif name == b"content-length" and length is None:
            length = value
    if length is None:
        return content_type, None
    try:
        return content_type, int(length)
    except ValueError:
        return content_type, None


# Clients send a few Content-Type values, again and again: each is read once.
@functools.lru_cache(maxsize=64)
def _says_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json")
    )
