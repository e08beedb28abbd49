"""Storing one result in every sink, telling a bad row from a sink that is down.

A sink that refuses a result's row for a reason of the row's own (`RowsRefusedError`) gets,
instead, the run as a failure with code `unstorable` and none of the content: the client sees a
failed run rather than nothing, and the same row is never retried forever. The sinks that already
stored the original get that failure too, so every sink tells the same story. Any other error
means the sink itself failed: `retry` decides whether (and after how long) to write again.

`Storage` is what the live engine, serve and the workers hold: their sinks, each result written
to every sink in turn, a sink that is down retried as the owner's `SinkRetry` says, every failed
write counted and logged (by error type only unless the owner quotes errors: the text may quote
content), and closing the sinks.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .._throttled_log import ThrottledLog
from ..core.events import Observers, current_observers, observed_by
from ..core.sync import background_loop
from .base import RowsRefusedError, ScoreSink
from .record import ScoreRecord

__all__ = [
    "UNSTORABLE",
    "Delivery",
    "SinkFailed",
    "SinkRetry",
    "Storage",
    "Stored",
    "close_sinks",
    "deliver",
    "unstorable",
]

UNSTORABLE: Final = "unstorable"

# The logger live users already configure: storing is the last step of a live run.
logger = logging.getLogger("scorewatch.live")

_Again = Callable[[str, int, Exception], Awaitable[bool]]
"""(sink name, failed attempts so far, last error) -> write again? May sleep first."""

_Outcome = Literal["stored", "refused", "dropped"]

Stored = Callable[[list[tuple[Any, "Delivery | None"]]], None]
"""`Storage.store_then`'s acknowledgement: `(token, delivery)` of results stored together;
a delivery of None means every sink holds the result as it was handed (no `Delivery` made)."""


@dataclass(frozen=True, slots=True)
class SinkFailed:
    """The event a failed write tells the bus (`core.events.Observers`): `sink` is the sink's
    low-cardinality name (e.g. `sqlite`)."""

    sink: str


@dataclass(slots=True)
class Delivery:
    """What became of one result: `stored` is what the sinks hold (the result, or its
    `unstorable` failure); `refused` names the sinks that refused its row, `unstorable` those
    that refused even the failure, `dropped` those that gave up (down when `retry` said stop)."""

    stored: ScoreRecord
    refused: list[str] = field(default_factory=list)
    unstorable: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every sink holds `stored`."""
        return not self.unstorable and not self.dropped


def unstorable(result: ScoreRecord, sink: str, error: BaseException) -> ScoreRecord:
    """`result` as a failed run without its content: what a sink that refused it stores."""
    return dataclasses.replace(
        result,
        call=result.call.without_content(),
        status="failed",
        result=None,
        error=f"the {sink} sink refused this run's row ({type(error).__name__}); "
        "its content was not stored",
        error_code=UNSTORABLE,
        error_type=type(error).__name__,
        failed_step=None,
        completed_steps=(),
    )


async def deliver(
    sinks: Sequence[ScoreSink],
    result: ScoreRecord,
    on_error: Callable[[str, Exception], None],
    retry: _Again | None = None,
    failed: Exception | None = None,
) -> Delivery:
    """Write `result` to every sink (see the module's doc). Each failed attempt is counted in
    telemetry (the `SinkFailed` event) and reported to `on_error(sink name, error)` from inside the
    `except`; without `retry`, a failing sink gets one attempt. `failed` is the error of a first
    attempt at the first sink made already (`Storage.store_then`), handled as if made here."""
    delivery = Delivery(result)
    holding: list[ScoreSink] = []
    for sink in sinks:
        name = _name(sink)
        outcome, error = await _write(sink, name, delivery.stored, on_error, retry, failed)
        failed = None
        if outcome == "refused" and delivery.stored is result:
            assert error is not None
            delivery.refused.append(name)
            delivery.stored = unstorable(result, name, error)
            for earlier in holding:  # they hold the original: bring them in line
                await _settle(delivery, earlier, on_error, retry)
            holding = [s for s in holding if _name(s) not in delivery.dropped]
            outcome, error = await _write(sink, name, delivery.stored, on_error, retry)
        if outcome == "stored":
            holding.append(sink)
        elif outcome == "refused":
            delivery.unstorable.append(name)
        else:
            delivery.dropped.append(name)
    return delivery


async def _settle(
    delivery: Delivery,
    sink: ScoreSink,
    on_error: Callable[[str, Exception], None],
    retry: _Again | None,
) -> None:
    name = _name(sink)
    outcome, _error = await _write(sink, name, delivery.stored, on_error, retry)
    if outcome == "refused":
        delivery.unstorable.append(name)
    elif outcome == "dropped":
        delivery.dropped.append(name)


async def _write(
    sink: ScoreSink,
    name: str,
    result: ScoreRecord,
    on_error: Callable[[str, Exception], None],
    retry: _Again | None,
    failed: Exception | None = None,
) -> tuple[_Outcome, Exception | None]:
    attempts = 0
    while True:
        try:
            if failed is not None:  # the first attempt, made by the caller
                error, failed = failed, None
                raise error
            await sink.write([result])
            return "stored", None
        except RowsRefusedError as refused:
            current_observers().emit(SinkFailed(name))
            on_error(name, refused)
            cause = refused.refused[0][1] if refused.refused else refused
            return "refused", cause if isinstance(cause, Exception) else refused
        except Exception as error:
            attempts += 1
            current_observers().emit(SinkFailed(name))
            on_error(name, error)
            if retry is None or not await retry(name, attempts, error):
                return "dropped", error


def _name(sink: ScoreSink) -> str:
    return str(getattr(sink, "name", type(sink).__name__))


@dataclass(frozen=True, slots=True)
class SinkRetry:
    """Write again to a sink that failed: after `first_pause` seconds, doubling up to 5 s, for
    at most `budget` seconds per result (None: until `Storage.stop_retrying`)."""

    first_pause: float
    budget: float | None = None


class Storage:
    """Every result to every sink in turn; a failing sink is logged and counted, and the next
    sink still gets the result. Without a `SinkRetry`, a failing sink gets one attempt.

    `quote_errors` logs a failed write with its traceback (throttled per sink); otherwise by
    error type only, since the text may quote content."""

    def __init__(
        self,
        sinks: Sequence[ScoreSink],
        *,
        retry: SinkRetry | None = None,
        quote_errors: bool = False,
        warn: ThrottledLog | None = None,
    ) -> None:
        self.sinks: tuple[ScoreSink, ...] = tuple(sinks)
        for sink in self.sinks:
            if not callable(getattr(sink, "write", None)):
                raise TypeError(f"{sink!r} is not a ScoreSink (it has no write method)")
        self._retry = retry
        self._quote = quote_errors
        self._warn = warn or ThrottledLog(logger)
        self._lock = threading.Lock()
        self._errors: dict[str, int] = {}
        self._refused = 0
        self._dropped = 0
        self._stopping = False
        self._pausing: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        # A single sink that acknowledges writes by calling back (a writer thread's).
        only = self.sinks[0] if len(self.sinks) == 1 else None
        self._write_acknowledged: Callable[..., None] | None = getattr(
            only, "write_acknowledged", None
        )
        # Bound once: the writer groups the writes of a batch by their callback.
        self._acknowledge = self._acknowledged

    def stop_retrying(self) -> None:
        """From now on a failing sink is given up on (shutdown has no time left). May be called
        from any thread: retries pausing on other loops are woken there."""
        with self._lock:
            self._stopping = True
            pausing = list(self._pausing)
        for loop, wake in pausing:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(wake.set)

    async def _pause(self, seconds: float) -> None:
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            if self._stopping:
                return
            self._pausing.add(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter[1].wait(), seconds)
        finally:
            with self._lock:
                self._pausing.discard(waiter)

    def errors(self) -> dict[str, int]:
        """Failed writes so far, per sink name."""
        with self._lock:
            return dict(self._errors)

    def stats(self) -> dict[str, int]:
        """`sink_errors` (failed writes), `sink_refused` (rows a sink refused), `sink_dropped`
        (results a sink never stored)."""
        with self._lock:
            return {
                "sink_errors": sum(self._errors.values()),
                "sink_refused": self._refused,
                "sink_dropped": self._dropped,
            }

    def store_then(
        self, result: ScoreRecord, then: Stored, token: Any, *, urgent: bool = False
    ) -> bool:
        """`store` without a coroutine waiting: with one sink that acknowledges by callback
        (`ThreadedSink.write_acknowledged`), hand it `result` and return True; once it is
        stored, `then` hears `(token, None)` on the sink's thread, in one call with the other
        results stored in the same batch under the same `then` (`urgent`: someone waits for it,
        so the sink's writer does not linger for more rows). A write that fails is handled as
        `store` handles it (counted, logged, a refused row stored as unstorable, a sink that is
        down retried), on the caller's loop, and `then` hears `(token, delivery)` there, alone.
        False: the sinks do not allow this (await `store`). Called on a running loop."""
        write = self._write_acknowledged
        if write is None:
            return False
        waiting = (result, then, token, asyncio.get_running_loop(), current_observers())
        try:
            write([result], self._acknowledge, waiting, urgent=urgent)
        except Exception:  # refused at once (closed): `store` meets the same error
            return False
        return True

    def _acknowledged(self, written: list[tuple[Any, BaseException | None]]) -> None:
        """The sink's writer stored a batch (`store_then`): each `then` hears its stored
        results together; a failed write is handled on its caller's loop."""
        stored: dict[Stored, list[tuple[Any, Delivery | None]]] = {}
        for (result, then, token, loop, observers), error in written:
            if error is None:
                together = stored.get(then)
                if together is None:
                    together = stored[then] = []
                together.append((token, None))
                continue
            if not isinstance(error, Exception):  # the writer itself was interrupted
                error = RuntimeError(f"the sink's writer stopped ({type(error).__name__})")
            finishing = self._store_failed(result, error, observers, then, token)
            try:
                asyncio.run_coroutine_threadsafe(finishing, loop)
            except RuntimeError:  # that loop has closed: finish on the background loop
                asyncio.run_coroutine_threadsafe(finishing, background_loop())
        for then, together in stored.items():
            try:
                then(together)
            except Exception:  # the owner's bookkeeping; another owner's still hears its own
                logger.exception("acknowledging stored results failed")

    async def _store_failed(
        self,
        result: ScoreRecord,
        error: Exception,
        observers: Observers,
        then: Stored,
        token: Any,
    ) -> None:
        with observed_by(observers):
            delivery = await self.store(result, failed=error)
        then([(token, delivery)])

    async def store(self, result: ScoreRecord, *, failed: Exception | None = None) -> Delivery:
        """Write `result` to every sink (`deliver`); `failed` is the error of a first write to
        the first sink made already (`store_then`)."""

        def failed_write(name: str, error: Exception) -> None:
            with self._lock:
                self._errors[name] = self._errors.get(name, 0) + 1
            if self._quote:
                self._warn.warning(
                    f"sink:{name}",
                    "live sink %r failed to store run %s",
                    name,
                    result.id,
                    exc_info=True,
                )
            else:
                logger.error(
                    "sink %r failed to store run %s (%s)", name, result.id, type(error).__name__
                )

        retry = self._retry
        budget = None if retry is None else retry.budget
        deadline = None if budget is None else time.monotonic() + budget

        async def again(name: str, attempts: int, error: Exception) -> bool:
            # The sink is down: the run keeps its slot (and the bounded queue behind it fills
            # up) until the sink is back, the retry budget is spent or shutdown has no time left.
            assert retry is not None
            pause = min(retry.first_pause * 2 ** min(attempts - 1, 5), 5.0)
            if self._stopping or (deadline is not None and time.monotonic() + pause > deadline):
                return False
            await self._pause(pause)
            return not self._stopping

        delivery = await deliver(self.sinks, result, failed_write, again if retry else None, failed)
        with self._lock:
            self._refused += len(delivery.refused)
            self._dropped += len(delivery.dropped) + len(delivery.unstorable)
        if self._quote:
            return delivery  # each failed write was logged already, with its traceback
        if delivery.refused:
            logger.error(
                "run %s stored as failed (unstorable): refused by %s",
                result.id,
                ", ".join(delivery.refused),
            )
        if not delivery.complete:
            logger.error(
                "run %s not stored by %s",
                result.id,
                ", ".join(delivery.dropped + delivery.unstorable),
            )
        return delivery

    async def aclose(self) -> None:
        await close_sinks(self.sinks)

    def close_blocking(self, timeout: float | None) -> None:
        """`aclose` for code without a running loop: a sink's own `close` when it has a
        synchronous one, else its `aclose` on scorewatch's background loop."""
        for sink in self.sinks:
            try:
                _close_sink_blocking(sink, timeout)
            except Exception as error:
                _close_failed(sink, error)


async def close_sinks(sinks: Sequence[ScoreSink]) -> None:
    """Close every sink; a failure is logged (by type: its text may quote content) and the
    next sink is still closed."""
    for sink in sinks:
        try:
            await sink.aclose()
        except Exception as error:
            _close_failed(sink, error)


def _close_failed(sink: ScoreSink, error: Exception) -> None:
    logger.error("closing sink %r failed (%s)", getattr(sink, "name", sink), type(error).__name__)


def _close_sink_blocking(sink: ScoreSink, timeout: float | None) -> None:
    closer = getattr(sink, "close", None)
    if callable(closer) and not inspect.iscoroutinefunction(closer):
        try:
            takes_timeout = "timeout" in inspect.signature(closer).parameters
        except (TypeError, ValueError):
            takes_timeout = False
        if takes_timeout:
            closer(timeout=timeout)
        else:
            closer()
        return
    future = asyncio.run_coroutine_threadsafe(sink.aclose(), background_loop())
    future.result(timeout)
