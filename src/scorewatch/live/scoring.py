"""`LiveScoring`: attach scorers to live agent traffic (spec §8).

The scoring itself is the engine's (`live.engine`: decisions, the bounded queue, scoring, sinks,
counts, drain and close). What `LiveScoring` adds is the agent's side: the `watch` decorator,
`submit` (which finds the call in the current OpenTelemetry span), the litellm callback, the
sync wrappers, and the process concerns (`live.process`: closing at exit and on SIGTERM).

Every call gets exactly one decision per scorer — `filtered`, `not_sampled`, `sampled`
(accepted), `dropped_queue_full` or `dropped_shutdown` (submitted after close) — and an accepted
run ends as `scored`, `not_scorable`, `failed`, or `dropped_shutdown` (given up at shutdown).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, overload

from ..core.scorer import Scorer
from . import observers
from .context import current_trace_ids
from .engine import Run, ScoringEngine
from .entry import ScorerEntry
from .litellm_callback import make_litellm_callback
from .observers import LiveDecision
from .process import SigtermHandler, close_at_exit
from .sinks.base import ScoreSink
from .watch import InputFrom, watch_callable

__all__ = ["LiveDecision", "LiveScoring", "LiveStats"]

logger = logging.getLogger("scorewatch.live")

LiveStats = dict[str, int]
F = TypeVar("F", bound=Callable[..., Any])


class LiveScoring:
    """Scores a sample of live traffic in the background, never in the caller's way.

    `scorers` maps a name to a `ScorerEntry` (or a bare `Scorer`, scored on every call).
    `max_concurrency` bounds the runs in flight, `max_queue` the runs waiting; beyond that a run
    is dropped and counted. `drain_on_exit` drains (up to `shutdown_timeout` seconds) at
    interpreter exit; `handle_sigterm=True` also drains on SIGTERM, then hands the signal on
    to the handler that was installed before (or the default, which ends the process).
    """

    def __init__(
        self,
        scorers: Mapping[str, ScorerEntry | Scorer | Mapping[str, Any]],
        *,
        max_concurrency: int = 32,
        max_queue: int = 10_000,
        sinks: Iterable[ScoreSink] = (),
        drain_on_exit: bool = True,
        handle_sigterm: bool = False,
        shutdown_timeout: float = 30.0,
    ) -> None:
        entries = {key: ScorerEntry.coerce(value) for key, value in scorers.items()}
        seen: dict[str, str] = {}
        for key, entry in entries.items():
            if entry.scorer.id in seen:
                raise ValueError(
                    f"scorers {seen[entry.scorer.id]!r} and {key!r} share the scorer id "
                    f"{entry.scorer.id!r}; live run ids and metrics are keyed by scorer id"
                )
            seen[entry.scorer.id] = key
        self._warm_up = _warm_up_judges(entries.values())
        self._engine = ScoringEngine(
            entries,
            sinks=tuple(sinks),
            max_concurrency=max_concurrency,
            max_queue=max_queue,
            quote_errors=True,
            pace=self._after_warm_up if self._warm_up is not None else None,
        )
        self.shutdown_timeout = shutdown_timeout
        self._shut = False
        self._sigterm = SigtermHandler(self._close_blocking)
        if drain_on_exit:
            close_at_exit(self, LiveScoring._close_blocking)
        if handle_sigterm:
            self.install_sigterm_handler()

    # -- introspection ---------------------------------------------------------------------------

    @property
    def entries(self) -> Mapping[str, ScorerEntry]:
        return dict(self._engine.entries)

    @property
    def sinks(self) -> tuple[ScoreSink, ...]:
        return self._engine.storage.sinks

    def stats(self) -> LiveStats:
        """Decision and outcome counts since creation, plus the current queue and in-flight."""
        return self._engine.stats()

    def sink_errors(self) -> dict[str, int]:
        """Failed sink writes so far, per sink name."""
        return self._engine.storage.errors()

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
        return dict(decisions)

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
        return self._engine.offer(
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

    async def _after_warm_up(self, run: Run) -> None:
        warm_up = self._warm_up
        if warm_up is not None and run.scorer.has_judge:
            if not warm_up.done():  # the agent's loop waits for it, never imports litellm
                await asyncio.wrap_future(warm_up)
            self._warm_up = None

    # -- draining and shutdown -------------------------------------------------------------------

    async def drain(self, timeout: float | None = 30.0) -> bool:  # noqa: ASYNC109 - public API
        """Wait until every accepted run has finished and been stored; False on timeout."""
        return await self._engine.drain(timeout)

    def drain_sync(self, timeout: float | None = 30.0) -> bool:
        """`drain` for code without a running event loop."""
        _refuse_inside_loop("drain_sync", "drain")
        return self._engine.drain_blocking(timeout)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Refuse new calls, drain (up to `timeout`, default `shutdown_timeout`), count what is
        left as `dropped_shutdown`, close the sinks and let telemetry flush what it holds.
        While another close is in progress, this one only waits for the queue to drain."""
        limit = self.shutdown_timeout if timeout is None else timeout
        if self._shut:
            await self._engine.drain(limit)
            return
        self._shut = True
        await self._engine.shutdown(limit)
        await self._engine.aclose()
        self._sigterm.restore()
        await asyncio.to_thread(observers.record_closed, limit)

    def close(self, timeout: float | None = None) -> None:
        """`aclose` for code without a running event loop."""
        _refuse_inside_loop("close", "aclose")
        self._close_blocking(timeout)

    def _close_blocking(self, timeout: float | None = None) -> None:
        limit = self.shutdown_timeout if timeout is None else timeout
        if self._shut:
            # Another close is under way (perhaps an aclose on the loop this signal handler
            # interrupted): make sure the queued work is done before the process goes on.
            self._engine.drain_blocking(limit)
            return
        self._shut = True
        self._engine.shutdown_blocking(limit)
        self._engine.close_blocking(limit)
        self._sigterm.restore()
        observers.record_closed(limit)

    def install_sigterm_handler(self) -> None:
        """On SIGTERM: drain and close (up to `shutdown_timeout`), then run the handler that was
        installed before, or terminate as the default handler would. Main thread only."""
        self._sigterm.install()


def _warm_up_judges(entries: Iterable[ScorerEntry]) -> concurrent.futures.Future[None] | None:
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


def _refuse_inside_loop(name: str, async_name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"LiveScoring.{name}() blocks, and this thread is running an event loop whose live "
        f"runs could not progress meanwhile; use `await live.{async_name}()` instead"
    )
