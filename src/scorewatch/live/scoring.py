"""`LiveScoring`: attach scorers to live agent traffic (docs/reference-semantics.md, "Live
scoring").

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
import functools
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, Unpack, overload

from opentelemetry import trace
from opentelemetry.context import get_current

from ..core.call import AgentCall, CallFields
from ..core.events import Observers
from ..core.scorer import Scorer
from ..privacy import PrivacyPolicy
from ..sinks.base import ScoreSink
from .budgets import Budgets
from .engine import ScoringEngine
from .entry import LiveScorerEntry
from .events import LiveDecision
from .litellm_callback import make_litellm_callback
from .process import SigtermHandler, close_at_exit
from .spend_budget import SpendBudget

__all__ = ["InputFrom", "LiveDecision", "LiveScoring", "LiveStats", "current_trace_ids"]

logger = logging.getLogger("scorewatch.live")

LiveStats = dict[str, int]
F = TypeVar("F", bound=Callable[..., Any])

_SPAN_KEY: str | None
try:  # the context key the API stores the current span under (stable, but not exported)
    from opentelemetry.trace.propagation import _SPAN_KEY as _API_SPAN_KEY

    _SPAN_KEY = _API_SPAN_KEY
except ImportError:  # pragma: no cover - a future API without it: take the public path
    _SPAN_KEY = None


class LiveScoring:
    """Scores a sample of live traffic in the background, never in the caller's way.

    `scorers` maps a name to a `LiveScorerEntry` (or a bare `Scorer`, scored on every call).
    `max_concurrency` bounds the runs in flight, `max_queue` the runs waiting; beyond that a run
    is dropped and counted. `drain_on_exit` drains (up to `shutdown_timeout` seconds) at
    interpreter exit; `handle_sigterm=True` also drains on SIGTERM, then hands the signal on
    to the handler that was installed before (or the default, which ends the process).
    `observers` is the event bus it reports to, and its runs and sinks with it (default: the
    bus current at construction, normally `core.events.OBSERVERS`). `privacy` (a
    `PrivacyPolicy` or its options, `{"redact": ["all"]}`) redacts personal data from the stored
    rows, spans, events and logs of its runs; the judge reads the calls as they are.
    `budget_usd_per_day` caps the judge spend of all scorers together per UTC day (each
    entry's `budget_usd_per_day` caps its own): sampling slows so the spend fits, and calls
    past it are `skipped_budget` (docs/live.md). `budget_redis_url` keeps the budgets
    in Redis (keys under `budget_redis_prefix`), shared with every process that names it.
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
        privacy: PrivacyPolicy | Mapping[str, Any] | None = None,
        budget_usd_per_day: float | None = None,
        budget_redis_url: str | None = None,
        budget_redis_prefix: str | None = None,
    ) -> None:
        entries = {key: LiveScorerEntry.coerce(value) for key, value in scorers.items()}
        seen: dict[str, str] = {}
        for key, entry in entries.items():
            if entry.scorer.id in seen:
                raise ValueError(
                    f"scorers {seen[entry.scorer.id]!r} and {key!r} share the scorer id "
                    f"{entry.scorer.id!r}; live run ids and metrics are keyed by scorer id"
                )
            seen[entry.scorer.id] = key
        if budget_usd_per_day is not None:
            try:
                SpendBudget(budget_usd_per_day)
            except ValueError as error:
                raise ValueError(f"LiveScoring budget_usd_per_day: {error}") from None
        per_scorer = {
            entry.scorer.id: entry.budget_usd_per_day
            for entry in entries.values()
            if entry.budget_usd_per_day is not None
        }
        budgets = Budgets.build(
            budget_usd_per_day, per_scorer, redis_url=budget_redis_url, prefix=budget_redis_prefix
        )
        self._engine = ScoringEngine(
            entries,
            sinks=tuple(sinks),
            max_concurrency=max_concurrency,
            max_queue=max_queue,
            quote_errors=True,
            observers=observers,
            privacy=None if privacy is None else PrivacyPolicy.model_validate(privacy),
            budgets=budgets,
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
    def entries(self) -> Mapping[str, LiveScorerEntry]:
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

    def submit(self, **fields: Unpack[CallFields]) -> dict[str, LiveDecision]:
        """Offer one call, given by its `AgentCall` fields, to every scorer; returns the
        decision per scorer name. Never waits.

        Without `trace_id`/`span_id` the current OpenTelemetry span (if any) locates the call.
        `run_id` is the agent's own id for the call (a fresh one when not given); it keys
        sampling when no trace id is known.
        """
        if fields.get("trace_id") is None and fields.get("span_id") is None:
            fields["trace_id"], fields["span_id"] = current_trace_ids()
        metadata = fields.get("metadata")
        if metadata:  # the caller's mapping may change after the call: the call keeps its own
            fields["metadata"] = dict(metadata)
        # The all-not-sampled answer is shared between calls: the caller gets its own copy.
        return dict(self._engine.offer(AgentCall(**fields)))

    def _offer(self, input: Any, output: Any, target: str) -> dict[str, LiveDecision]:
        """A watched call: located by the current span, the decisions not copied."""
        trace_id, span_id = current_trace_ids()
        return self._engine.offer_watched(input, output, target, trace_id, span_id)

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
        return make_litellm_callback(self.submit, target)

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
        await asyncio.to_thread(self._engine.observers.flush, limit)

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
        self._engine.observers.flush(limit)

    def install_sigterm_handler(self) -> None:
        """On SIGTERM: drain and close (up to `shutdown_timeout`), then run the handler that was
        installed before, or terminate as the default handler would. Main thread only."""
        self._sigterm.install()


def _refuse_inside_loop(name: str, async_name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"LiveScoring.{name}() blocks, and this thread is running an event loop whose live "
        f"runs could not progress meanwhile; use `await live.{async_name}()` instead"
    )


def current_trace_ids() -> tuple[str | None, str | None]:
    """The current span's (trace id, span id) as lowercase hex, or (None, None). Only the
    OpenTelemetry API is used: with no SDK configured there is no current span, and the run id
    keys sampling instead."""
    if _SPAN_KEY is not None and get_current().get(_SPAN_KEY) is None:
        # No span at all (the common case without tracing): answered without the API's
        # lookup chain, which costs a watched call about as much as the rest of its decision.
        return None, None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


# -- watch: the wrapper returns exactly what the function returns and raises exactly what it
# raises; a call that raises is not scored. Nothing that goes wrong in scorewatch reaches the
# caller.


InputFrom = Callable[..., Any]
"""Receives the call's arguments exactly as the function did and returns the run input."""

Extract = Callable[[tuple[Any, ...], Mapping[str, Any]], Any]

_RECEIVERS = frozenset({"self", "cls"})


def _first_argument_extractor(fn: Callable[..., Any]) -> Extract:
    """The run input: the first argument after `self`/`cls`, as passed or defaulted."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature: fall back to the first argument given
        return lambda args, kwargs: args[0] if args else next(iter(kwargs.values()), None)
    skip = 0
    if (
        params
        and params[0].name in _RECEIVERS
        and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)
    ):
        skip = 1
    if len(params) <= skip:
        return lambda args, kwargs: None
    first = params[skip]
    default = None if first.default is first.empty else first.default
    if first.kind is first.VAR_POSITIONAL:
        return lambda args, kwargs: args[skip] if len(args) > skip else None
    if first.kind is first.VAR_KEYWORD:
        return lambda args, kwargs: next(iter(kwargs.values()), None)
    if first.kind is first.KEYWORD_ONLY:
        return lambda args, kwargs: kwargs.get(first.name, default)

    def positional(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        if len(args) > skip:
            return args[skip]
        return kwargs.get(first.name, default)

    return positional


def _refuse_generators(fn: Callable[..., Any]) -> None:
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        kind = "an async generator" if inspect.isasyncgenfunction(fn) else "a generator"
        name = getattr(fn, "__qualname__", repr(fn))
        raise TypeError(
            f"scorewatch watch(): {name} is {kind} function. Its output only exists once the "
            "caller has consumed it, so it cannot be scored by a decorator; collect the output "
            "and call live.submit(input=..., output=...) yourself."
        )


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def watch_callable(
    fn: Any,
    observe: Callable[[Any, Any, str], object],
    target: str | None,
    input_from: InputFrom | None,
) -> Any:
    """Wrap `fn` (a function, method, classmethod or staticmethod object, or a callable)."""
    if isinstance(fn, classmethod | staticmethod):
        return type(fn)(watch_callable(fn.__func__, observe, target, input_from))
    if not callable(fn):
        raise TypeError(f"watch() decorates a function, got {type(fn).__name__}")
    _refuse_generators(fn)
    name = target or getattr(fn, "__qualname__", None) or type(fn).__name__
    extract: Extract
    if input_from is not None:
        if not callable(input_from):
            raise TypeError("watch(input_from=...) must be callable")
        chosen = input_from

        def extract_with(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
            return chosen(*args, **kwargs)

        extract = extract_with
    else:
        extract = _first_argument_extractor(fn)

    def record(args: tuple[Any, ...], kwargs: Mapping[str, Any], output: Any) -> None:
        try:
            run_input = extract(args, kwargs)
        except Exception:
            logger.exception("watch(%s): input_from failed; call not scored", name)
            return
        try:
            observe(run_input, output, name)
        except Exception:
            logger.exception("watch(%s): submitting the call for scoring failed; ignored", name)

    if _is_async(fn):

        @functools.wraps(fn)
        async def watched_async(*args: Any, **kwargs: Any) -> Any:
            output = await fn(*args, **kwargs)
            record(args, kwargs, output)
            return output

        return watched_async

    @functools.wraps(fn)
    def watched(*args: Any, **kwargs: Any) -> Any:
        output = fn(*args, **kwargs)
        record(args, kwargs, output)
        return output

    return watched
