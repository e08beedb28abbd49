"""A writer thread with group commit: concurrent writes are stored together, off every loop.

Each `write` puts its results on a queue and waits on a future; the thread takes everything
waiting (up to `max_batch` writes), stores it in one go, then resolves every future of the batch.
A plain thread (not an executor) so that writes still work from `atexit` handlers, after
`concurrent.futures` has refused new work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Final, cast

from ..result import LiveResult

__all__ = ["BatchWriterThread", "ThreadedSink"]

_STOP: Final = object()


class SinkClosedError(RuntimeError):
    pass


class BatchWriterThread:
    def __init__(
        self,
        name: str,
        store: Callable[[list[LiveResult]], None],
        release: Callable[[], None],
        *,
        max_batch: int = 256,
    ) -> None:
        self._store = store
        self._release = release
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=f"scorewatch-{name}", daemon=True)
        self._thread.start()

    def submit(self, results: Sequence[LiveResult]) -> concurrent.futures.Future[None]:
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise SinkClosedError("the sink is closed")
            self._queue.put((list(results), future))
        return future

    async def write(self, results: Sequence[LiveResult]) -> None:
        if not results:
            return
        await asyncio.wrap_future(self.submit(results))

    def close(self, timeout: float | None = None) -> None:
        """Store what is queued, release the resource and stop the thread."""
        with self._lock:
            if self._closed:
                already = True
            else:
                already = False
                self._closed = True
                self._queue.put(_STOP)
        if not already or self._thread.is_alive():
            self._thread.join(timeout)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await asyncio.to_thread(self.close, timeout)

    def _serve(self) -> None:
        stopping = False
        while not stopping:
            items = [self._queue.get()]
            while len(items) < self._max_batch:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            batch: list[LiveResult] = []
            futures: list[concurrent.futures.Future[None]] = []
            for item in items:
                if item is _STOP:
                    stopping = True
                    continue
                results, future = cast(
                    "tuple[list[LiveResult], concurrent.futures.Future[None]]", item
                )
                batch.extend(results)
                futures.append(future)
            error: BaseException | None = None
            if batch:
                try:
                    self._store(batch)
                except BaseException as raised:  # reported to every writer of the batch
                    error = raised
            for future in futures:
                _settle(future, error)
        try:
            self._release()
        except Exception:  # nothing left to report it to but the log
            import logging

            logging.getLogger("scorewatch.live.sinks").exception("closing a sink failed")


class ThreadedSink:
    """A sink whose writes a `BatchWriterThread` stores: a subclass provides `_store` (called on
    the thread with each batch) and `_release` (called there once, when the thread stops), and
    calls `_start_writer` at the end of its `__init__`."""

    name: str
    _writer: BatchWriterThread

    def _start_writer(self, thread_name: str) -> None:
        self._writer = BatchWriterThread(thread_name, self._store, self._release)

    def _store(self, batch: list[LiveResult]) -> None:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError

    async def write(self, results: Sequence[LiveResult]) -> None:
        await self._writer.write(results)

    async def aclose(self) -> None:
        await self._writer.aclose()

    def close(self, timeout: float | None = None) -> None:
        """Store what is queued and release the file (waits up to `timeout` seconds)."""
        self._writer.close(timeout)


def _settle(future: concurrent.futures.Future[None], error: BaseException | None) -> None:
    if future.cancelled():
        return
    try:
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
    except concurrent.futures.InvalidStateError:
        pass
