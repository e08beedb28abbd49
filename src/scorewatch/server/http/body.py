"""Reading a request body within a size limit and a time limit, for the guard (`guard.py`).

The time limit is for the whole body, so a client dribbling a byte now and then cannot hold a
connection and its buffer open. It is kept by one sweep per reader and event loop rather than a
timer per request: `asyncio.timeout` schedules and cancels a timer handle for every body, about
6 µs on uvloop, as much as a tenth of what serving a plain `POST /v1/scores` costs. A read
registers its task and deadline in `Deadlines` (a dict entry) instead, once it has to wait: a
body that is whole in the first message and there at once (it arrived with the request's head,
as most do) is read with no bookkeeping at all, since nothing waited. A sweep that runs while
any read is registered, every `timeout / 8` seconds (at most one second), cancels the reads
past their deadline, and the cancelled read turns its own cancellation into `TooSlow`, as
`asyncio.timeout` would (a cancellation from anywhere else stays one). A body is thus cut off
between `timeout` and `timeout * 1.125` (or `timeout + 1 s`) after its read began.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, Final

from ..._asgi import Message, Receive
from ...live.work_queue import resumed

__all__ = ["BodyReader", "Deadlines", "TooLarge", "TooSlow"]

# The sweep's period is this share of the timeout, and never longer than the cap.
_SWEEP_SHARE: Final = 0.125
_SWEEP_CAP_S: Final = 1.0


class TooLarge(Exception):
    """The body is longer than the limit (nothing past the limit was read)."""


class TooSlow(Exception):
    """The body did not arrive whole within the time limit."""


class Deadlines:
    """The body reads under way on one event loop, each with its deadline, and the sweep that
    cancels those past it."""

    __slots__ = ("_period", "_sweep", "fired", "loop", "pending")

    def __init__(self, loop: asyncio.AbstractEventLoop, period: float) -> None:
        self.loop = loop
        self._period = period
        self._sweep: asyncio.TimerHandle | None = None
        self.pending: dict[asyncio.Task[object], float] = {}
        """Each read's task, and the loop time by which its body must be whole."""
        self.fired: set[asyncio.Task[object]] = set()
        """Tasks this sweep cancelled, until their read has seen the cancellation."""

    def watch(self, task: asyncio.Task[object], timeout: float) -> None:
        self.pending[task] = self.loop.time() + timeout
        if self._sweep is None:
            self._sweep = self.loop.call_later(self._period, self._run)

    def _run(self) -> None:
        now = self.loop.time()
        late = [task for task, deadline in self.pending.items() if deadline <= now]
        for task in late:
            del self.pending[task]
            self.fired.add(task)
            task.cancel()
        # Sweeps stop while nothing is read, and start again with the next read.
        self._sweep = self.loop.call_later(self._period, self._run) if self.pending else None


class BodyReader:
    """Reads request bodies within `limit` bytes and `timeout` seconds for the whole of each,
    on the event loop of the first one read (a reader belongs to one loop, as a server does)."""

    __slots__ = ("_deadlines", "_limit", "_timeout")

    def __init__(self, limit: int, timeout: float) -> None:
        self._limit = limit
        self._timeout = timeout
        self._deadlines: Deadlines | None = None

    def _watch(self) -> tuple[Deadlines, asyncio.Task[object]]:
        loop = asyncio.get_running_loop()
        deadlines = self._deadlines
        if deadlines is None or deadlines.loop is not loop:
            period = min(self._timeout * _SWEEP_SHARE, _SWEEP_CAP_S)
            deadlines = self._deadlines = Deadlines(loop, period)
        task = asyncio.current_task(loop)
        assert task is not None  # a request is served by a task
        deadlines.watch(task, self._timeout)
        return deadlines, task

    def read(self, receive: Receive) -> Coroutine[Any, Any, bytes | None]:
        """The body; None when the client disconnected. Raises `TooLarge` / `TooSlow`. (The
        reading coroutine itself, not one awaiting it: every request's body is read here.)"""
        return self._consume(receive, keep=True)

    async def discard(self, receive: Receive) -> None:
        """Read and drop up to the limit, within the time limit; never raises."""
        with contextlib.suppress(TooLarge, TooSlow):
            await self._consume(receive, keep=False)

    async def _consume(self, receive: Receive, *, keep: bool) -> bytes | None:
        # Most bodies arrived with their head: the first `receive()` completes without waiting
        # and the body is whole, so nothing waited and no deadline is kept (a watch costs a
        # clock read, the task's lookup and a dict entry set and removed, about as much as the
        # read). A first message that waits, or a body in several, is read under the watch.
        step: Any = receive().__await__()
        try:
            pending = step.send(None)
        except StopIteration as done:
            message: Message = done.value
        else:
            return await self._watched(receive, keep, None, (step, pending))
        if message["type"] == "http.request" and not message.get("more_body", False):
            body: bytes = message.get("body", b"")
            if len(body) > self._limit:
                raise TooLarge
            return body  # the usual case: one message, not copied
        return await self._watched(receive, keep, message, None)

    async def _watched(
        self,
        receive: Receive,
        keep: bool,
        message: Message | None,
        waiting: tuple[Any, Any] | None,
    ) -> bytes | None:
        """The body from its first `message`, or from the first `receive()` that is `waiting`
        (its awaitable's iterator and what it yielded), within the time limit."""
        deadlines, task = self._watch()
        try:
            if message is None:
                assert waiting is not None
                first: Message = await resumed(*waiting)
            else:
                first = message
            if first["type"] != "http.request":
                return None  # the client went away
            body: bytes = first.get("body", b"")
            size = len(body)
            if size > self._limit:
                raise TooLarge
            if not first.get("more_body", False):
                return body
            chunks = [body] if keep else []
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self._limit:
                    raise TooLarge
                if keep:
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        except asyncio.CancelledError:
            if task in deadlines.fired:
                deadlines.fired.discard(task)
                if task.uncancel() == 0:  # the sweep's cancellation, and nobody else's
                    raise TooSlow from None
            raise
        finally:
            deadlines.pending.pop(task, None)
