"""serve's HTTP/1.1 connections: uvicorn's h11 protocol, bounded in number and in header time,
and refusing overload before it parses anything.

uvicorn bounds neither how many connections are open nor how long a request's head may take, so
a client opening connections and sending a few header bytes now and then holds file
descriptors until there are none left (the accept loop then fails, and logs, thousands of times
a second). Here, for every connection of the server (both listeners):

- at most `server.max_connections` are open. One more evicts the connection that has waited
  longest for a request (an idle keep-alive one, or one still sending its head), which is
  closed without an answer, as an idle connection may always be; when every connection is busy
  with a request, the new one is answered 503 `too_many_connections` and closed;
- a request's head (request line and headers) must arrive within `server.header_timeout`
  seconds, counted from the connection's opening, or from the first byte of a later request on
  a keep-alive connection (the time between requests is uvicorn's keep-alive timeout): else 408
  `header_timeout`, and the connection is closed;
- a score request (`POST /v1/scores`, `POST /v1/scores:batch`) arriving whole in one read while
  the intake sheds (`guard.shed_answer`) is answered 429 from the raw bytes, before h11 parses it
  and before any task or ASGI call: a refusal costs a few microseconds instead of a few hundred,
  so refusing stays cheap at any offered load. Anything unusual (a token to check that does not
  match, chunked bodies, `Expect`, pipelined requests, a body still on its way) takes the normal
  path, where the guard refuses it just the same.

`serve` also caps `max_connections` to what the process's file-descriptor limit allows
(`connection_budget`), and logs a repeating accept failure once a minute, not once per try.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from collections import OrderedDict
from typing import Any, Final

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from ..._throttled_log import ThrottledLog
from .auth import authorization_problem
from .guard import SCORE_PATHS, shed_answer
from .state import ServiceState

__all__ = ["BoundedH11Protocol", "ConnectionBounds", "connection_budget", "quiet_accept_errors"]

logger = logging.getLogger("scorewatch.server")

# File descriptors kept for everything but client connections: sinks, logs, the judges' pooled
# connections, Redis and PostgreSQL pools.
_RESERVED_FDS: Final = 256
_MIN_CONNECTIONS: Final = 8
_LARGEST_HEAD: Final = 64 << 10
# Past the keep-alive timeout, how long a connection waits for the loop to read its socket once
# more before it is closed (`BoundedH11Protocol.timeout_keep_alive_handler`).
_KEEP_ALIVE_GRACE_S: Final = 0.01
_SCORE_LINES: Final = tuple(
    f"POST {path}{tail}".encode("ascii") for path in SCORE_PATHS for tail in (" ", "?")
)


def _raw_answer(status: int, phrase: str, body: dict[str, Any], *extra: str) -> bytes:
    payload = json.dumps(body).encode("utf-8")
    head = [
        f"HTTP/1.1 {status} {phrase}",
        "content-type: application/json",
        f"content-length: {len(payload)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


def _closing_answer(status: int, phrase: str, error: str, message: str, *extra: str) -> bytes:
    return _raw_answer(
        status, phrase, {"error": error, "message": message}, *extra, "connection: close"
    )


class ConnectionBounds:
    """What every connection of one server shares: the count, the idle ones oldest first, the
    limits and the service they answer for. `protocol` is uvicorn's protocol factory."""

    def __init__(
        self,
        service: ServiceState,
        *,
        max_connections: int,
        header_timeout: float,
        score_port: int | None = None,
    ) -> None:
        self.service = service
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        # Score requests are refused early only on the main listener (the traces listener
        # answers 404 to them).
        self.score_port = score_port
        self.open = 0
        self.idle: OrderedDict[BoundedH11Protocol, None] = OrderedDict()
        self.log = ThrottledLog(logger)
        self._too_many = _closing_answer(
            503,
            "Service Unavailable",
            "too_many_connections",
            f"the service holds its limit of {max_connections} connections, all busy "
            "(server.max_connections); retry later",
            f"retry-after: {service.config.server.retry_after}",
        )
        self.too_slow = _closing_answer(
            408,
            "Request Timeout",
            "header_timeout",
            f"the request's head did not arrive within {header_timeout:g} s "
            "(server.header_timeout)",
        )
        self._refusals: dict[int, bytes] = {}

    def protocol(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> BoundedH11Protocol:
        return BoundedH11Protocol(config, server_state, app_state, _loop, bounds=self)

    def admit(self) -> bytes | None:
        """Count a new connection; past the limit, evict the longest idle one. The answer to
        send the new connection before closing it when there is none to evict, else None."""
        self.open += 1
        if self.open <= self.max_connections:
            return None
        if self.idle:
            oldest, _ = self.idle.popitem(last=False)
            oldest.evict()
            self.log.warning(
                "connections",
                "%d connections open (server.max_connections): closing the ones that waited "
                "longest for a request",
                self.max_connections,
            )
            return None
        self.log.warning(
            "connections",
            "%d connections open (server.max_connections), all busy: refusing new ones (503)",
            self.max_connections,
        )
        return self._too_many

    def early_refusal(self, data: bytes, local_port: int | None) -> tuple[bytes, bool] | None:
        """The 429 for `data`, one whole score request read at once while the intake sheds,
        and whether to close after it; None when it must take the normal path."""
        if not data.startswith(_SCORE_LINES) or local_port != self.score_port:
            return None
        service = self.service
        if service.draining:
            return None
        end = data.find(b"\r\n\r\n", 0, _LARGEST_HEAD)
        if end < 0:
            return None
        lines = data[:end].split(b"\r\n")
        if not lines[0].endswith(b" HTTP/1.1"):
            return None
        length = close = None
        authorization = None
        host = False
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                return None
            name = name.strip().lower()
            if name == b"content-length" and length is None and value.strip().isdigit():
                length = int(value)
            elif name in (b"content-length", b"transfer-encoding", b"expect"):
                return None  # twice, chunked, or waiting for a 100 Continue: h11 decides
            elif name == b"connection":
                close = b"close" in value.lower()
            elif name == b"authorization":
                authorization = value.strip().decode("latin-1")
            elif name == b"host":
                host = True
        if not host:
            return None  # h11 answers 400
        if length is None or len(data) != end + 4 + length:
            return None  # no body length, more on its way, or a pipelined request behind
        if service.token is not None and authorization_problem(service.token, authorization):
            return None  # the guard answers 401
        shed = shed_answer(service)
        if shed is None:
            return None
        return self._refusal(shed), bool(close)

    def _refusal(self, body: dict[str, Any]) -> bytes:
        wait = int(body["retry_after"])
        answer = self._refusals.get(wait)
        if answer is None:
            answer = self._refusals[wait] = _raw_answer(
                429, "Too Many Requests", body, f"retry-after: {wait}"
            )
        return answer


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol within `ConnectionBounds` (see the module's doc)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        bounds: ConnectionBounds,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._bounds = bounds
        self._head_timer: asyncio.TimerHandle | None = None
        self._counted = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._counted = True
        refusal = self._bounds.admit()
        if refusal is not None:
            transport.write(refusal)
            transport.close()
            return
        self._bounds.idle[self] = None
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._counted:
            self._counted = False
            self._bounds.open -= 1
        self._bounds.idle.pop(self, None)
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        conn = self.conn
        if conn.their_state is h11.IDLE and conn.our_state is h11.IDLE and not self._buffered():
            refused = self._bounds.early_refusal(data, self.server[1] if self.server else None)
            if refused is not None:
                answer, close = refused
                self._unset_keepalive_if_required()
                self._cancel_head_timer()  # a whole head came; the next one starts anew
                self.transport.write(answer)
                if close:
                    self.transport.close()
                else:
                    self.timeout_keep_alive_task = self.loop.call_later(
                        self.timeout_keep_alive, self.timeout_keep_alive_handler
                    )
                return
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def timeout_keep_alive_handler(self) -> None:
        # uvloop runs due timers before it reads the sockets that became readable meanwhile: a
        # loop held up (a scorer holding the GIL) past a connection's keep-alive timeout would
        # close it over a request that arrived in time and is waiting unread, and closing a
        # socket with unread data resets it (the client's next read fails). One more look at
        # the socket first: a request there cancels this (`_unset_keepalive_if_required`).
        self.timeout_keep_alive_task = self.loop.call_later(
            _KEEP_ALIVE_GRACE_S, super().timeout_keep_alive_handler
        )

    def evict(self) -> None:
        """Close an idle connection to make room (nothing is owed to it)."""
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self.transport.close()

    # -- waiting for a head ----------------------------------------------------------------------

    def _track(self) -> None:
        """After h11 has read what came: idle (waiting for a head) or busy with a request."""
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE:
            self._bounds.idle.setdefault(self, None)
            if self._buffered():  # a head has begun: it has header_timeout to end
                self._arm_head_timer()
        else:
            self._bounds.idle.pop(self, None)
            self._cancel_head_timer()

    def _buffered(self) -> bool:
        return bool(self.conn.trailing_data[0])

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(
                self._bounds.header_timeout, self._head_too_slow
            )

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self._bounds.idle.pop(self, None)
        self._bounds.log.warning(
            "header_timeout",
            "closed a connection whose request head did not arrive within %g s "
            "(server.header_timeout)",
            self._bounds.header_timeout,
        )
        self.transport.write(self._bounds.too_slow)
        self.transport.close()


def connection_budget(configured: int) -> int:
    """`configured`, or fewer when the process may not open that many files: the soft limit of
    open files is raised to the hard one first, `_RESERVED_FDS` are kept for the rest."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = configured + _RESERVED_FDS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return configured
    budget = max(_MIN_CONNECTIONS, soft - _RESERVED_FDS)
    logger.warning(
        "server.max_connections = %d, but this process may open %d files: at most %d "
        "connections (raise the limit, e.g. `ulimit -n`, for more)",
        configured,
        soft,
        budget,
    )
    return budget


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Log a failing accept (no file descriptor left, ...) once a minute with a count, instead
    of asyncio's log line with a traceback for every try (thousands a second)."""
    throttled = ThrottledLog(logger)

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == "socket.accept() out of system resource":
            error = context.get("exception")
            throttled.error(
                "accept", "cannot accept connections: %s", error or "out of system resources"
            )
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
