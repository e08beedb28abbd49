"""`ScoringLoop`: an event loop on a thread of its own, where serve's scoring runs.

The HTTP loop parses, admits and answers; scorer runs, judge calls and sink writes run here. On
one shared loop, asyncio runs every callback that is ready before it polls the sockets again,
so a busy moment of scoring (dozens of runs ready at once) made every HTTP answer wait behind
it. On two loops the answers only compete with scoring for the GIL, which the interpreter hands
over every switch interval (5 ms): a slow iteration of scoring no longer delays an answer by its
whole length.

The loop is uvloop's when it is installed (serve's own stack), else asyncio's:
`asyncio.new_event_loop()` makes a selector loop even in a uvloop process (uvicorn passes a loop
factory and sets no policy), and on the scoring thread every iteration of that loop (the
hand-off's polls and wake-ups, the sink's linger, each ready callback) ran as Python
(BENCHMARKS.md).

Any engine can run here: `run(coro)` awaits, from another loop, a coroutine run on this one;
work queues place their jobs on `loop`. What is tied to the loop that first used it (psycopg's
pool, aiohttp sessions) is created, used and closed here: close sinks through `run`, before
`close()`. Context variables do not cross threads: what a job needs of its caller's context
(a span to link, a captured context) travels in the job itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["ScoringLoop"]

logger = logging.getLogger("scorewatch.server")

T = TypeVar("T")

# What close() waits for the tasks still running on the loop once they are cancelled.
_CANCEL_GRACE_S = 5.0


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop's loop when it is installed, else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


class ScoringLoop:
    """An event loop running on a daemon thread, started on first use, stopped by `close()`.
    `new_loop` makes it (default: uvloop's when installed, else asyncio's)."""

    def __init__(
        self,
        name: str = "scorewatch-scoring-loop",
        *,
        new_loop: Callable[[], asyncio.AbstractEventLoop] | None = None,
    ) -> None:
        self._name = name
        self._new_loop = new_loop if new_loop is not None else _loop_factory()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop (its thread starts now if it has not yet)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the scoring loop is closed")
            if self._loop is None:
                ready = threading.Event()
                loop = self._new_loop()
                thread = threading.Thread(
                    target=self._run, args=(loop, ready), name=self._name, daemon=True
                )
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @property
    def alive(self) -> bool:
        """False once the thread has ended (closed, or died); True before the first start."""
        with self._lock:
            return not self._closed and (self._thread is None or self._thread.is_alive())

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on this loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on this loop and await its result on the caller's loop (cancelling the
        caller cancels it there too)."""
        loop = self.loop
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def close(self, timeout: float = 10.0) -> None:
        """Cancel what still runs on the loop, stop it and join the thread. Idempotent; never
        called on the loop itself."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("ScoringLoop.close() called on its own thread")
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:  # closed already (its thread died)
            return
        thread.join(timeout)
        if thread.is_alive():
            logger.warning("the scoring loop did not stop within %.1fs", timeout)

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
            # Stopped: what still runs is cancelled and given a moment to unwind (its finally
            # blocks, a WorkQueue moving the job elsewhere).
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=_CANCEL_GRACE_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        except Exception:
            logger.exception("the scoring loop failed")
        finally:
            asyncio.set_event_loop(None)
            loop.close()
