"""`LiveScoring`: attach scorers to live agent traffic (spec §8).

Per scorer and per call, in order: the filter (exceptions skip and are counted as `filtered`),
then sampling, then admission to the bounded queue. Every call gets exactly one decision per
scorer — `filtered`, `not_sampled`, `sampled` (accepted), `dropped_queue_full` or
`dropped_shutdown` (submitted after close) — and an accepted run ends as `scored`, `failed`, or
`dropped_shutdown` (given up at shutdown). So at any time:

    sampled == scored + failed + queued + in_flight + (accepted runs dropped at shutdown)

Results go to every sink in turn; a sink error is logged and counted and the next sink still
gets the result. Telemetry hears decisions, in-flight changes, queue depth and sink errors
as events on the bus (`core.events`; live never imports telemetry).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import inspect
import logging
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from random import getrandbits, random
from types import FrameType
from typing import Any, TypeVar, overload

from ..core.events import LIVE_COUNTS, LiveDecision, Observers, current_observers, observed_by
from ..core.scorer import Scorer
from ..core.sync import background_loop
from ..sinks.base import ScoreSink
from ..sinks.call import ScoredCall
from ..sinks.delivery import Delivery, deliver
from ..sinks.record import ScoreRecord
from .context import current_trace_ids
from .entry import LiveScorerEntry
from .litellm_callback import make_litellm_callback
from .run_ids import RunIdIssuer, live_run_id
from .score_call import score_call
from .throttle import ThrottledLog
from .watch import InputFrom, watch_callable
from .work_queue import Job, JobOutcome, WorkQueue

__all__ = ["LiveDecision", "LiveScoring", "LiveStats"]

logger = logging.getLogger("scorewatch.live")

# How long closing waits, after the drain budget, for runs that are storing their results.
_COMMIT_GRACE_S = 10.0

LiveStats = dict[str, int]
F = TypeVar("F", bound=Callable[..., Any])

_ADMISSION: dict[str, LiveDecision] = {
    "accepted": "sampled",
    "queue_full": "dropped_queue_full",
    "closed": "dropped_shutdown",
}


@dataclass(frozen=True, slots=True)
class _Work:
    key: str
    scorer: Scorer
    run_id: str
    call: ScoredCall


class LiveScoring:
    """Scores a sample of live traffic in the background, never in the caller's way.

    `scorers` maps a name to a `LiveScorerEntry` (or a bare `Scorer`, scored on every call).
    `max_concurrency` bounds the runs in flight, `max_queue` the runs waiting; beyond that a run
    is dropped and counted. `drain_on_exit` drains (up to `shutdown_timeout` seconds) at
    interpreter exit; `handle_sigterm=True` also drains on SIGTERM, then hands the signal on
    to the handler that was installed before (or the default, which ends the process).
    `observers` is the event bus it reports to, and its runs and sinks with it (default: the
    bus current at construction, normally `core.events.OBSERVERS`).
    """

    def __init__(
        self,
        scorers: Mapping[str, LiveScorerEntry | Scorer | Mapping[str, Any]],
        *,
        max_concurrency: int = 32,
        max_queue: int = 10_000,
        sinks: Iterable[ScoreSink] = (),
        drain_on_exit: bool = True,
        handle_sigterm: bool = False,
        shutdown_timeout: float = 30.0,
        observers: Observers | None = None,
    ) -> None:
        self._observers = current_observers() if observers is None else observers
        self._entries: dict[str, LiveScorerEntry] = {
            key: LiveScorerEntry.coerce(value) for key, value in scorers.items()
        }
        seen: dict[str, str] = {}
        for key, entry in self._entries.items():
            if entry.scorer.id in seen:
                raise ValueError(
                    f"scorers {seen[entry.scorer.id]!r} and {key!r} share the scorer id "
                    f"{entry.scorer.id!r}; live run ids and metrics are keyed by scorer id"
                )
            seen[entry.scorer.id] = key
        # For the unkeyed fast path of `submit`: without filters, and when every scorer samples
        # at a rate, a call whose draw is at or above the highest rate is taken by none of them.
        rates = [entry.sampling.rate for entry in self._entries.values()]
        self._unfiltered = all(entry.filter is None for entry in self._entries.values())
        self._highest_rate: float | None = (
            max(rates) if rates and all(rate is not None for rate in rates) else None  # type: ignore[type-var]
        )
        self._none_sampled: dict[str, LiveDecision] = dict.fromkeys(self._entries, "not_sampled")
        self._sinks: tuple[ScoreSink, ...] = tuple(sinks)
        for sink in self._sinks:
            if not callable(getattr(sink, "write", None)):
                raise TypeError(f"{sink!r} is not a ScoreSink (it has no write method)")
        self.shutdown_timeout = shutdown_timeout
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys(LIVE_COUNTS, 0)
        self._sink_errors: dict[str, int] = {}
        self._warn = ThrottledLog(logger)
        self._ids = RunIdIssuer()
        self._queue: WorkQueue[_Work] = WorkQueue(
            self._execute,
            max_queue=max_queue,
            max_concurrency=max_concurrency,
            on_in_flight=self._observers.in_flight,
            on_finished=self._finished,
        )
        self._depth_source: Callable[[], int] = lambda: self._queue.queued
        self._unregister_depth = self._observers.register_queue_depth(self._depth_source)
        self._shut = False
        self._previous_sigterm: Any = None
        self._sigterm_installed = False
        self._warm_up = _warm_up_judges(self._entries.values())
        if drain_on_exit:
            _drain_at_exit(self)
        if handle_sigterm:
            self.install_sigterm_handler()

    # -- introspection ---------------------------------------------------------------------------

    @property
    def entries(self) -> Mapping[str, LiveScorerEntry]:
        return dict(self._entries)

    @property
    def sinks(self) -> tuple[ScoreSink, ...]:
        return self._sinks

    def stats(self) -> LiveStats:
        """Decision and outcome counts since creation, plus the current queue and in-flight."""
        with self._lock:
            snapshot = dict(self._counts)
        snapshot["queued"] = self._queue.queued
        snapshot["in_flight"] = self._queue.in_flight
        return snapshot

    def sink_errors(self) -> dict[str, int]:
        """Failed sink writes so far, per sink name."""
        with self._lock:
            return dict(self._sink_errors)

    # -- submitting ------------------------------------------------------------------------------

    def submit(
        self,
        *,
        input: Any = None,
        output: Any = None,
        target: str | None = None,
        trace_id: str | None = None,
        span_id: str | None = None,
        request_context: Any = None,
        ground_truth: Any = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, LiveDecision]:
        """Offer one call to every scorer; returns the decision per scorer name. Never waits.

        Without `trace_id`/`span_id` the current OpenTelemetry span (if any) locates the call.
        `run_id` is the agent's own id for the call (a fresh one when not given); it keys
        sampling when no trace id is known.
        """
        decisions = self._offer(
            input,
            output,
            target,
            trace_id,
            span_id,
            request_context,
            ground_truth,
            run_id,
            metadata,
        )
        # The all-not-sampled answer is shared between calls: the caller gets its own copy.
        return dict(decisions) if decisions is self._none_sampled else decisions

    def _offer(
        self,
        input: Any,
        output: Any,
        target: str | None,
        trace_id: str | None = None,
        span_id: str | None = None,
        request_context: Any = None,
        ground_truth: Any = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, LiveDecision]:
        if trace_id is None and span_id is None:
            trace_id, span_id = current_trace_ids()
        draw: float | None = None
        if not trace_id and not run_id and self._unfiltered:
            # Nothing to hash: the key would be a fresh random run id, whose hash is a uniform
            # draw. Draw once per call (so nested rates stay nested, as with a hash) and build
            # the call only when some scorer takes it.
            draw = random()
            highest = self._highest_rate
            if highest is not None and draw >= highest:
                return self._not_sampled_by_all()
        call = ScoredCall(
            input=input,
            output=output,
            target=target,
            trace_id=trace_id,
            span_id=span_id,
            run_id=run_id or f"{getrandbits(128):032x}",
            request_context=request_context,
            ground_truth=ground_truth,
            metadata=dict(metadata) if metadata else None,
        )
        sample_key = call.trace_id or call.run_id
        decisions: dict[str, LiveDecision] = {}
        for key, entry in self._entries.items():
            decision = self._decide(entry, call, sample_key, draw)
            if decision == "sampled":
                scorer = entry.scorer
                base = live_run_id(scorer.id, call.trace_id, call.run_id, call.span_id, target)
                work = _Work(key, scorer, self._ids.issue(base), call)
                decision = _ADMISSION[self._queue.offer(work)]
            self._count(decision)
            self._observers.decision(entry.scorer.id, decision)
            decisions[key] = decision
        return decisions

    def _not_sampled_by_all(self) -> dict[str, LiveDecision]:
        with self._lock:
            self._counts["not_sampled"] += len(self._entries)
        if self._observers.subscribers:
            for entry in self._entries.values():
                self._observers.decision(entry.scorer.id, "not_sampled")
        return self._none_sampled

    def _decide(
        self, entry: LiveScorerEntry, call: ScoredCall, sample_key: str, draw: float | None = None
    ) -> LiveDecision:
        if draw is not None:  # unfiltered, unkeyed: see `submit`
            rate = entry.sampling.rate
            return "sampled" if rate is None or draw < rate else "not_sampled"
        if entry.filter is not None:
            try:
                keep = entry.filter(call)
                if inspect.isawaitable(keep):
                    if inspect.iscoroutine(keep):
                        keep.close()
                    raise TypeError("a live filter must be synchronous; it returned an awaitable")
            except Exception:
                self._warn.warning(
                    f"filter:{entry.scorer.id}",
                    "live filter of scorer %r raised; call skipped (counted as filtered)",
                    entry.scorer.id,
                    exc_info=True,
                )
                return "filtered"
            if not keep:
                return "filtered"
        try:
            sampled = entry.sampling.should_sample(sample_key)
        except Exception:
            logger.warning("live sampling of scorer %r failed; skipped", entry.scorer.id)
            return "not_sampled"
        return "sampled" if sampled else "not_sampled"

    def _count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[key] += amount

    @overload
    def watch(self, fn: F, /) -> F: ...

    @overload
    def watch(
        self, fn: None = None, /, *, target: str | None = None, input_from: InputFrom | None = None
    ) -> Callable[[F], F]: ...

    def watch(
        self,
        fn: Any = None,
        /,
        *,
        target: str | None = None,
        input_from: InputFrom | None = None,
    ) -> Any:
        """Decorate a sync or async function or method so every call that returns is submitted:
        input = the first argument after self/cls (or `input_from(*args, **kwargs)`), output =
        the return value, target = `target` (default: the function's qualified name).
        Generator functions are refused with a TypeError."""

        observe = self._offer  # (input, output, target): one frame less per watched call

        def decorate(function: F) -> F:
            wrapped: F = watch_callable(function, observe, target, input_from)
            return wrapped

        if fn is not None:
            return decorate(fn)
        return decorate

    def litellm_callback(self, *, target: str) -> Any:
        """A litellm `CustomLogger` that submits every successful completion (input = the
        messages, output = the response text). Add it to `litellm.callbacks`."""

        def submit(**fields: Any) -> object:
            return self.submit(**fields)

        return make_litellm_callback(submit, target)

    # -- running ---------------------------------------------------------------------------------

    async def _execute(self, job: Job[_Work]) -> JobOutcome:
        work = job.payload
        warm_up = self._warm_up
        if warm_up is not None and work.scorer.has_judge:
            if not warm_up.done():  # the agent's loop waits for it, never imports litellm
                await asyncio.wrap_future(warm_up)
            self._warm_up = None
        with observed_by(self._observers):  # a job's task starts from an empty context
            live_result = await score_call(work.scorer, work.call, work.run_id)
        outcome: JobOutcome = live_result.outcome
        if outcome == "failed":
            self._warn.warning(
                f"run:{work.scorer.id}:{live_result.error_type}",
                "live scorer %r failed on run %s: %s",
                work.scorer.id,
                work.run_id,
                live_result.error,
            )
        if not self._queue.begin_commit(job):
            return outcome  # given up at shutdown meanwhile: counted as dropped, never stored
        delivery = await self._store(live_result)
        return delivery.stored.outcome

    async def _store(self, result: ScoreRecord) -> Delivery:
        def failed(name: str, _error: Exception) -> None:
            with self._lock:
                self._sink_errors[name] = self._sink_errors.get(name, 0) + 1
            self._warn.warning(
                f"sink:{name}",
                "live sink %r failed to store run %s",
                name,
                result.id,
                exc_info=True,
            )

        with observed_by(self._observers):
            return await deliver(self._sinks, result, failed)

    def _finished(self, job: Job[_Work], outcome: JobOutcome) -> None:
        self._count(outcome)
        if outcome == "dropped_shutdown":
            self._observers.decision(job.payload.scorer.id, "dropped_shutdown")

    # -- draining and shutdown -------------------------------------------------------------------

    async def drain(self, timeout: float | None = 30.0) -> bool:  # noqa: ASYNC109 - public API
        """Wait until every accepted run has finished and been stored; False on timeout."""
        return await self._queue.drain(timeout)

    def drain_sync(self, timeout: float | None = 30.0) -> bool:
        """`drain` for code without a running event loop."""
        _refuse_inside_loop("drain_sync", "drain")
        return self._queue.drain_blocking(timeout)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Refuse new calls, drain (up to `timeout`, default `shutdown_timeout`), count what is
        left as `dropped_shutdown`, close the sinks and flush OpenTelemetry providers.
        While another close is in progress, this one only waits for the queue to drain."""
        if self._shut:
            await self._queue.drain(self.shutdown_timeout if timeout is None else timeout)
            return
        self._shut = True
        self._queue.close()
        limit = self.shutdown_timeout if timeout is None else timeout
        if not await self._queue.drain(limit):
            self._give_up(limit)
            await self._queue.drain(_COMMIT_GRACE_S)
        for sink in self._sinks:
            try:
                await sink.aclose()
            except Exception:
                logger.exception("closing live sink %r failed", getattr(sink, "name", sink))
        self._release()
        await asyncio.to_thread(_flush_opentelemetry, limit)

    def close(self, timeout: float | None = None) -> None:
        """`aclose` for code without a running event loop."""
        _refuse_inside_loop("close", "aclose")
        self._shutdown_blocking(timeout)

    def _shutdown_blocking(self, timeout: float | None) -> None:
        if self._shut:
            # Another close is under way (perhaps an aclose on the loop this signal handler
            # interrupted): make sure the queued work is done before the process goes on.
            self._queue.drain_blocking(self.shutdown_timeout if timeout is None else timeout)
            return
        self._shut = True
        self._queue.close()
        limit = self.shutdown_timeout if timeout is None else timeout
        if not self._queue.drain_blocking(limit):
            self._give_up(limit)
            self._queue.drain_blocking(_COMMIT_GRACE_S)
        for sink in self._sinks:
            try:
                _close_sink_blocking(sink, limit)
            except Exception:
                logger.exception("closing live sink %r failed", getattr(sink, "name", sink))
        self._release()
        _flush_opentelemetry(limit)

    def _give_up(self, timeout: float | None) -> None:
        # Runs already storing their results are left to finish (`_COMMIT_GRACE_S`): a run
        # counted as dropped is never stored, a stored one never counted as dropped.
        left = self._queue.abandon_all()
        if left:
            logger.warning(
                "live scoring: %d run(s) not finished within %ss of shutdown; counted as "
                "dropped_shutdown",
                left,
                timeout,
            )

    def _release(self) -> None:
        self._unregister_depth()
        if self._sigterm_installed:
            self._restore_sigterm()

    def _at_exit(self) -> None:
        try:
            self._shutdown_blocking(None)
        except Exception:
            logger.exception("live scoring: draining at exit failed")

    # -- SIGTERM ---------------------------------------------------------------------------------

    def install_sigterm_handler(self) -> None:
        """On SIGTERM: drain and close (up to `shutdown_timeout`), then run the handler that was
        installed before, or terminate as the default handler would. Main thread only."""
        if self._sigterm_installed:
            return
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("a SIGTERM handler can only be installed from the main thread")
        self._previous_sigterm = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self._sigterm_installed = True

    def _restore_sigterm(self) -> None:
        self._sigterm_installed = False
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            previous = self._previous_sigterm
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous_sigterm
        try:
            self._shutdown_blocking(None)
        except Exception:
            logger.exception("live scoring: draining on SIGTERM failed")
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_IGN:
            return
        else:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)


def _warm_up_judges(entries: Iterable[LiveScorerEntry]) -> concurrent.futures.Future[None] | None:
    """Warm litellm up in a thread when a scorer is judged by a litellm model id, so that the
    first judged run does not import it on the agent's event loop."""
    if "litellm" in sys.modules or not any(
        entry.scorer.judge is not None and isinstance(entry.scorer.judge.model, str)
        for entry in entries
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


def _drain_at_exit(live: LiveScoring) -> None:
    """Drain `live` when the interpreter exits, as early as possible.

    `threading`'s exit hooks run before `concurrent.futures` stops accepting work and before
    non-daemon threads are joined; plain `atexit` handlers run after, when a judge that needs
    an executor (litellm's sync-in-thread paths) can no longer work. The hook holds the
    instance weakly, and does nothing once it is closed.
    """
    # concurrent.futures registers its own hook when its thread module is first imported, and
    # hooks run last-registered first: import it now so that ours runs before it.
    import concurrent.futures.thread  # noqa: F401

    ref = weakref.ref(live)

    def drain() -> None:
        instance = ref()
        if instance is not None:
            instance._at_exit()

    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        try:
            register(drain)
            return
        except RuntimeError:  # the interpreter is already shutting down
            pass
    atexit.register(drain)


def _refuse_inside_loop(name: str, async_name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"LiveScoring.{name}() blocks, and this thread is running an event loop whose live "
        f"runs could not progress meanwhile; use `await live.{async_name}()` instead"
    )


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


def _flush_opentelemetry(timeout: float | None) -> None:
    """Flush whatever OpenTelemetry providers are installed (API getters, duck-typed flush)."""
    from opentelemetry import metrics, trace

    providers: list[Any] = [trace.get_tracer_provider(), metrics.get_meter_provider()]
    try:
        from opentelemetry import _logs

        providers.append(_logs.get_logger_provider())
    except ImportError:  # older API without the logs bridge
        pass
    millis = int((timeout if timeout is not None else 30.0) * 1000)
    for provider in providers:
        flush = getattr(provider, "force_flush", None)
        if not callable(flush):
            continue
        try:
            flush(millis)
        except TypeError:
            try:
                flush()
            except Exception:
                logger.debug("flushing %r failed", provider, exc_info=True)
        except Exception:
            logger.debug("flushing %r failed", provider, exc_info=True)
