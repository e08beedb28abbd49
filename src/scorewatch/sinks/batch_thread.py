"""A writer thread with group commit: concurrent writes are stored together, off every loop.

Each `write` puts its results on a queue and waits on a future; the thread takes everything
waiting (up to `max_batch` writes), stores it in one go, then resolves every future of the batch.
`write_then` is the same write for a caller that would rather be called back than wait: its
callback runs on the writer's thread once the batch is stored, so that caller keeps no coroutine
waiting and costs its loop no wake-up. `write_acknowledged` is that write for a caller with many
writes in flight (the live engine's runs): one `acknowledge` callback, shared by its writes, is
called once per batch with the token of each of its writes there and that write's outcome, so
the caller settles a transaction's writes together (one lock taken for all, not one each).
With a `linger`, it also waits that long after the first write for more, so that writes
arriving one by one (scored runs finishing apart) still share a transaction and a wake-up of the
thread instead of paying one each; closing ends the wait, and what is queued is stored first. So
does an `urgent` write (someone is waiting for that very commit: a client's `?wait=true`, or runs
queued behind the slots the lingering writes hold): a linger saves work only where nobody waits.
One bad row must not cost the others: a result that cannot be encoded is refused alone, and a
batch the sink refuses for another reason than being down is stored again row by row, so exactly
the bad rows are refused (`RowsRefusedError` to their writers) and every other row is stored.
A plain thread (not an executor) so that writes still work from `atexit` handlers, after
`concurrent.futures` has refused new work.

With `on_caller_loop`, a `write_then` made on a running event loop is stored by that loop
itself instead: its batch is taken and stored by one callback on that loop at the end of the
linger (at once when urgent), with no hand-off to the thread. In serve the scoring loop then
stores its own runs: one thread fewer busy per request, no wake-up of the writer nor GIL
hand-over to it, and the acknowledgements run on the loop whose runs they end
(BENCHMARKS.md). `write`, and writes from outside a loop, still go to the thread; one lock keeps
the two from storing at once, and `close` hands writes still waiting on a loop to the thread,
so nothing queued is lost whichever loop stops first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from .base import RowsRefusedError
from .record import ScoreRecord

__all__ = ["Acknowledge", "BatchWriterThread", "ThreadedSink"]

Acknowledge = Callable[[list[tuple[Any, BaseException | None]]], None]
"""Called with the (token, outcome) of writes stored in one batch: outcome None (stored), the
sink's error, or the refused rows (`RowsRefusedError`), as `write` would raise them."""

_STOP: Final = object()


class SinkClosedError(RuntimeError):
    pass


class BatchWriterThread:
    def __init__(
        self,
        name: str,
        encode: Callable[[ScoreRecord], Any],
        store: Callable[[list[Any]], None],
        release: Callable[[], None],
        refuses: Callable[[Exception], bool],
        *,
        max_batch: int = 256,
        linger: float = 0.0,
        on_caller_loop: bool = False,
    ) -> None:
        self._encode = encode
        self._on_caller_loop = on_caller_loop
        # Writes waiting on each loop that stores its own (`on_caller_loop`).
        self._on_loops: dict[asyncio.AbstractEventLoop, _LoopBatch] = {}
        # Held while a batch is stored and the resource released: by the thread, or a loop.
        self._storing = threading.Lock()
        self._linger = linger
        self._store = store
        self._release = release
        self._refuses = refuses
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._closed = False
        self._urgent = False  # an urgent write (or a whole batch) waits: no linger
        self._lock = threading.Lock()
        self._wake = threading.Event()  # ends the writer's linger early (close, full batch)
        self._thread = threading.Thread(target=self._serve, name=f"scorewatch-{name}", daemon=True)
        self._thread.start()

    async def write(self, results: Sequence[ScoreRecord]) -> None:
        if not results:
            return
        loop = asyncio.get_running_loop()
        # An asyncio future the thread settles on its loop: the writes of one batch are settled
        # by one hand-off per loop (one wake-up), not one each through a concurrent future.
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._closed:
                raise SinkClosedError("the sink is closed")
            self._queue.put((list(results), loop, future, None))
            if self._linger > 0 and self._queue.qsize() >= self._max_batch:
                self._wake.set()  # a whole batch waits: no reason to linger
        await future

    def write_then(
        self,
        results: Sequence[ScoreRecord],
        then: Callable[[BaseException | None], None],
        *,
        urgent: bool = False,
    ) -> None:
        """Queue `results`; `then(None)` once they are stored, else `then(error)` as `write`
        would raise it. `then` runs on the writer's thread and must not block. `urgent`: store
        them without lingering (with what waits already). With `on_caller_loop` and a running
        loop here, that loop stores them (and `then` runs on it)."""
        self.write_acknowledged(results, _each_then, then, urgent=urgent)

    def write_acknowledged(
        self,
        results: Sequence[ScoreRecord],
        acknowledge: Acknowledge,
        token: Any,
        *,
        urgent: bool = False,
    ) -> None:
        """`write_then` for a caller with many writes: once they are stored, `acknowledge` is
        called with `(token, outcome)` of each write made with it in the batch (one call for
        all of them; see `Acknowledge`), where `write_then`'s callback would run."""
        loop: asyncio.AbstractEventLoop | None = None
        if self._on_caller_loop:
            try:  # (inline, not a helper's call: this runs for every write)
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        with self._lock:
            if self._closed:
                raise SinkClosedError("the sink is closed")
            if loop is not None:
                write = _Write(list(results), None, acknowledge, token)
                self._wait_on_loop_locked(loop, write, urgent)
                return
            self._queue.put((list(results), None, acknowledge, token))
            if self._linger > 0 and (urgent or self._queue.qsize() >= self._max_batch):
                # Set before the wake-up: a writer that cleared it before this put reads it.
                self._urgent = True
                self._wake.set()

    def _wait_on_loop_locked(
        self, loop: asyncio.AbstractEventLoop, write: _Write, urgent: bool
    ) -> None:
        """Add `write` to `loop`'s batch; the first write of a batch schedules its storing
        there, after the linger (an urgent write or a full batch: at once)."""
        batch = self._on_loops.get(loop)
        if batch is None:
            batch = self._on_loops[loop] = _LoopBatch()
        batch.writes.append(write)
        now = urgent or self._linger <= 0 or len(batch.writes) >= self._max_batch
        if now and not batch.soon:
            batch.soon = True
            loop.call_soon(self._store_on, loop)
        elif batch.timer is None and not batch.soon:
            batch.timer = loop.call_later(self._linger, self._store_on, loop)

    def _store_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """On `loop`: store the writes waiting there (none if `close` took them already)."""
        with self._storing:
            with self._lock:
                batch = self._on_loops.pop(loop, None)
            if batch is None:
                return
            if batch.timer is not None:
                batch.timer.cancel()
            self._store_writes(batch.writes)
        _settle_all(batch.writes)

    def close(self, timeout: float | None = None) -> None:
        """Store what is queued, release the resource and stop the thread."""
        with self._lock:
            if self._closed:
                already = True
            else:
                already = False
                self._closed = True
                # Writes still waiting on a loop (stopped, maybe, before their turn came) are
                # the thread's to store now, before it stops.
                for batch in self._on_loops.values():
                    for write in batch.writes:
                        self._queue.put((write.results, write.loop, write.waiter, write.token))
                self._on_loops.clear()
                self._queue.put(_STOP)
                self._wake.set()  # ends a linger under way
        if not already or self._thread.is_alive():
            self._thread.join(timeout)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await asyncio.to_thread(self.close, timeout)

    def _serve(self) -> None:
        stopping = False
        while not stopping:
            items = self._take()
            writes: list[_Write] = []
            for item in items:
                if item is _STOP:
                    stopping = True
                    continue
                results, loop, waiter, token = cast("tuple[list[ScoreRecord], Any, Any, Any]", item)
                writes.append(_Write(results, loop, waiter, token))
            if writes:
                with self._storing:
                    self._store_writes(writes)
                _settle_all(writes)
        with self._storing:  # after a loop's batch under way
            try:
                self._release()
            except Exception:  # nothing left to report it to but the log
                logging.getLogger("scorewatch.sinks").exception("closing a sink failed")

    def _take(self) -> list[object]:
        """The next batch: what waits now, and with `linger`, what arrives within that many
        seconds of the first (up to `max_batch`; a close request or an urgent write ends the
        wait)."""
        items = [self._queue.get()]
        if self._linger > 0 and items[0] is not _STOP:
            # One wake-up per batch: the thread sleeps out the linger instead of waking for
            # every row that arrives meanwhile; a close, an urgent write or a full batch waiting
            # ends it early.
            self._wake.clear()
            if not (self._closed or self._urgent) and self._queue.qsize() < self._max_batch - 1:
                self._wake.wait(self._linger)
            # Before the batch is taken: an urgent write queued after it keeps its flag.
            self._urgent = False
        while len(items) < self._max_batch and items[-1] is not _STOP:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return items

    def _store_writes(self, writes: list[_Write]) -> None:
        rows: list[tuple[_Write, ScoreRecord, Any]] = []
        for write in writes:
            for result in write.results:
                try:
                    rows.append((write, result, self._encode(result)))
                except Exception as error:  # this row cannot be written, whatever the sink
                    write.refuse(result, error)
        if not rows:
            return
        try:
            self._store([row for _write, _result, row in rows])
            return
        except BaseException as error:
            if not isinstance(error, Exception) or not self._refuses(error):
                for write in writes:
                    write.error = error
                return
        # Refused, but which rows? One at a time tells.
        for index, (write, result, row) in enumerate(rows):
            try:
                self._store([row])
            except BaseException as error:
                if isinstance(error, Exception) and self._refuses(error):
                    write.refuse(result, error)
                    continue
                for later_write, _result, _row in rows[index:]:  # down now: not stored
                    later_write.error = error
                return


@dataclass(slots=True)
class _Write:
    results: list[ScoreRecord]
    loop: asyncio.AbstractEventLoop | None  # None: `waiter` is an `Acknowledge` callback
    waiter: asyncio.Future[None] | Acknowledge
    token: Any  # what `waiter` is told this write by (an `Acknowledge` callback's)
    # (None until a row is refused: most writes never make the list.)
    refused: list[tuple[ScoreRecord, BaseException]] | None = None
    error: BaseException | None = None

    def refuse(self, result: ScoreRecord, error: BaseException) -> None:
        if self.refused is None:
            self.refused = []
        self.refused.append((result, error))

    def outcome(self) -> BaseException | None:
        """What the writer is told: None (stored), the sink's error, or the refused rows."""
        if self.error is None and self.refused:
            return RowsRefusedError(self.refused)
        return self.error


@dataclass(slots=True)
class _LoopBatch:
    """Writes waiting to be stored by their loop (`on_caller_loop`)."""

    writes: list[_Write] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None  # the end of the linger
    soon: bool = False  # storing is scheduled for the loop's next iteration


def _settle_all(writes: list[_Write]) -> None:
    """Settle a batch's futures, one hand-off to each loop that wrote, and call each callback
    once with the outcomes of its writes."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], Any]]] = {}
    by_callback: dict[Any, list[tuple[Any, BaseException | None]]] = {}
    for write in writes:
        waiter: Any = write.waiter  # (no `cast` call per write)
        if write.loop is None:
            acknowledged = by_callback.get(waiter)
            if acknowledged is None:
                acknowledged = by_callback[waiter] = []
            # (A write stored as it was, the common one, costs no `outcome` call.)
            error = write.error if write.refused is None else write.outcome()
            acknowledged.append((write.token, error))
            continue
        by_loop.setdefault(write.loop, []).append((waiter, write.outcome()))
    for acknowledge, acknowledged in by_callback.items():
        try:
            acknowledge(acknowledged)
        except Exception:  # the caller's bookkeeping; the other writes are still settled
            logging.getLogger("scorewatch.sinks").exception("a write's callback failed")
    for loop, settled in by_loop.items():
        # A loop closed meanwhile has nobody waiting for these any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, settled)


def _each_then(acknowledged: list[tuple[Any, BaseException | None]]) -> None:
    """`write_then`'s writes acknowledged: each write's own callback (its token) hears its
    outcome; one that fails does not keep the others from hearing theirs."""
    for then, outcome in acknowledged:
        try:
            then(outcome)
        except Exception:
            logging.getLogger("scorewatch.sinks").exception("a write's callback failed")


class ThreadedSink:
    """A sink whose writes a `BatchWriterThread` stores: a subclass provides `_encode` (a result
    as the row `_store` takes), `_store` (called on the thread with each batch of rows),
    `_refuses` (tells a bad row from an outage) and `_release` (called there once, when the
    thread stops), and calls `_start_writer` at the end of its `__init__`."""

    name: str
    _writer: BatchWriterThread
    write_acknowledged: Callable[..., None]
    """`write_then` acknowledged with the other writes of its batch made with the same callback:
    the writer's own `BatchWriterThread.write_acknowledged` (no call between, for every run)."""

    def _start_writer(
        self, thread_name: str, linger: float = 0.0, *, on_caller_loop: bool = False
    ) -> None:
        self._writer = BatchWriterThread(
            thread_name,
            self._encode,
            self._store,
            self._release,
            self._refuses,
            linger=linger,
            on_caller_loop=on_caller_loop,
        )
        self.write_acknowledged = self._writer.write_acknowledged

    def _encode(self, result: ScoreRecord) -> Any:
        raise NotImplementedError

    def _store(self, rows: list[Any]) -> None:
        raise NotImplementedError

    def _refuses(self, error: Exception) -> bool:
        """Whether `error` (raised by `_store`) is about the rows, not the sink being down."""
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError

    async def write(self, results: Sequence[ScoreRecord]) -> None:
        await self._writer.write(results)

    def write_then(
        self,
        results: Sequence[ScoreRecord],
        then: Callable[[BaseException | None], None],
        *,
        urgent: bool = False,
    ) -> None:
        """`write`, acknowledged by calling `then` on the writer's thread (`BatchWriterThread`);
        `urgent`: without lingering."""
        self._writer.write_then(results, then, urgent=urgent)

    async def aclose(self) -> None:
        await self._writer.aclose()

    def close(self, timeout: float | None = None) -> None:
        """Store what is queued and release the file (waits up to `timeout` seconds)."""
        self._writer.close(timeout)


def _settle(settled: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    """On the writers' loop: each future's outcome (a cancelled writer is skipped)."""
    for future, error in settled:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
