"""One live run, scored and stored: what the engine, and the queue workers, do with each run.

`score_call` turns a `ScoredCall` into scorer-run fields and runs the scorer; a failing run ends as
a failed result rather than an exception. A call carrying more than `OFFLOAD_CHARS` characters
of text has its scorers' synchronous function steps run in a small process-wide pool
(`core.offload`), so model-free scoring of a megabyte of text never stalls a loop that serves
others (an agent, HTTP clients, a Redis consumer); a smaller call scores on the loop, as handing
a step to a thread costs more than scoring a few kilobytes. The pool has
`SCOREWATCH_SCORING_THREADS` threads (default 2): scorer steps are Python code holding the GIL,
so more threads would not score faster, only compete with the loop.

`Storage` writes each result to every sink in turn (`sinks.delivery`), retries a sink that is
down as its owner's `SinkRetry` says, and counts what failed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..core.offload import offload_function_steps
from ..core.scorer import Scorer
from ..core.sync import background_loop
from ..sinks.base import ScoreSink
from ..sinks.call import ScoredCall
from ..sinks.delivery import Delivery, deliver
from ..sinks.record import ScoreRecord
from .throttle import ThrottledLog

__all__ = [
    "OFFLOAD_CHARS",
    "SinkRetry",
    "Storage",
    "call_is_heavy",
    "close_sinks",
    "score_call",
    "scoring_executor",
    "warm_up_judges",
]

logger = logging.getLogger("scorewatch.live")

# About 3 ms of the heaviest model-free scorer on the loop, and about 50 times what handing a
# step to a thread costs.
OFFLOAD_CHARS = 4096

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def scoring_executor() -> ThreadPoolExecutor:
    """The process-wide pool for CPU-heavy scorer steps (created on first use)."""
    global _executor
    with _lock:
        if _executor is None:
            threads = max(1, int(os.environ.get("SCOREWATCH_SCORING_THREADS", "2") or 2))
            _executor = ThreadPoolExecutor(threads, thread_name_prefix="scorewatch-scoring")
        return _executor


def call_is_heavy(call: ScoredCall, limit: int = OFFLOAD_CHARS) -> bool:
    """Whether the texts a scorer reads (input, output, ground truth) hold more than `limit`
    characters. Stops counting once over the limit, so a huge call costs no more than a
    small one."""
    budget = limit
    pending: list[Any] = [call.input, call.output, call.ground_truth]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            budget -= len(value)
        elif isinstance(value, Mapping):
            pending.extend(value.values())
            budget -= len(value)
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            pending.extend(value)
            budget -= len(value)
        else:
            budget -= 8
        if budget < 0:
            return True
    return False


async def score_call(scorer: Scorer, call: ScoredCall, run_id: str) -> ScoreRecord:
    """Run `scorer` on `call` under `run_id`; a raised `Exception` becomes a failed result."""
    executor = scoring_executor() if call_is_heavy(call) else None
    try:
        with offload_function_steps(executor):
            result = await scorer.run(
                input=call.input,
                output=call.output,
                run_id=run_id,
                ground_truth=call.ground_truth,
                request_context=call.request_context,
                score_source=call.score_source,
                target=call.target,
                target_trace_id=call.trace_id,
                target_span_id=call.span_id,
                target_metadata=call.metadata,
            )
    except Exception as error:
        return ScoreRecord.failure(run_id, scorer, call, error)
    return ScoreRecord.success(run_id, scorer, call, result)


def warm_up_judges(scorers: Iterable[Scorer]) -> concurrent.futures.Future[None] | None:
    """Warm litellm up in a thread when a scorer is judged by a litellm model id, so that the
    first judged run does not import it on the agent's event loop."""
    if "litellm" in sys.modules or not any(
        scorer.judge is not None and isinstance(scorer.judge.model, str) for scorer in scorers
    ):
        return None
    from ..judge.litellm_judge import warm_up_litellm

    done: concurrent.futures.Future[None] = concurrent.futures.Future()

    def warm() -> None:
        try:
            warm_up_litellm()
        finally:
            done.set_result(None)

    threading.Thread(target=warm, name="scorewatch-litellm-warm-up", daemon=True).start()
    return done


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

    async def store(self, result: ScoreRecord) -> Delivery:
        def failed(name: str, error: Exception) -> None:
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

        delivery = await deliver(self.sinks, result, failed, again if retry else None)
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
