"""The event bus: how add-ons (telemetry, cost collectors, the demo) observe scorewatch.

The bus is the mechanism only, as prometheus' `CollectorRegistry` is: producers emit to an
`Observers` object and never learn who listens, and each producer defines the events it emits in
its own module, in whatever layer it sits (docs/architecture.md lists them). An `Observer`
subscribes with `Observers.add`. The bus names no event but the runs' own, defined here beside
the scorer that emits them.

Runs. At the start of every run each observer is asked for a `RunListener` of that run (or
None). The listener then hears the run's steps and judge attempts, in order, on the task running
the scorer, so it may make its own context current between a `*_started` call and the matching
`*_finished` call. The run start carries the trace links the run was started under
(`linked_runs`), so a listener can link the run's span without asking anyone else.

Producers' events. `Observers.emit(event)` hands an event to the functions observers subscribed
to its type (`Observer.handlers`); a producer whose event is frequent asks `hears(its type)`
first, so that nobody listening costs one lookup and no event object.

Pulled values. A producer registers a zero-argument source under a type of its own
(`register_source(Reading, ...)`) and keeps the function that unregisters it; a reader (a gauge,
when it is collected) reads every source of that type (`read(Reading)`).

`OBSERVERS` is the process's default bus (as `prometheus_client.REGISTRY` is the default
registry). A test or an embedding application makes its own `Observers` current for the runs it
starts with `observed_by`, and hands it to the components that take one. With nobody subscribed
an event costs one tuple check; an observer, handler or listener that raises is logged and
ignored: it never breaks a run.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import Context, ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..judge.protocol import JudgeReply, JudgeRequest
from ..judge.usage import JudgeUsage
from .steps import StepName, StepType

if TYPE_CHECKING:
    from .records import JudgeExecutionFailure, JudgeExecutionSuccess
    from .result import ScorerRun, ScorerRunResult
    from .scorer import Scorer

__all__ = [
    "OBSERVERS",
    "Handler",
    "JudgeAttempt",
    "JudgeCacheLookup",
    "Observer",
    "Observers",
    "RunListener",
    "RunStart",
    "StepOutcome",
    "TraceLink",
    "current_observers",
    "linked_runs",
    "observed_by",
    "observed_context",
    "tell",
]

logger = logging.getLogger("scorewatch.events")

T = TypeVar("T")

Handler = Callable[[Any], object]
"""A function an observer subscribes to one type of producer event; it receives the event."""

# -- the runs' events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceLink:
    """A span a run should link to, by its W3C hex ids (core never sees OpenTelemetry types)."""

    trace_id: str
    span_id: str

    @classmethod
    def of(cls, trace_id: int, span_id: int) -> TraceLink:
        return cls(format(trace_id, "032x"), format(span_id, "016x"))


# Made once per run (RunStart) and once per step (StepOutcome): not `frozen`, whose generated
# `__init__` sets each field through `object.__setattr__`, at about twice the cost of a plain
# one. Listeners read them and never change them; every listener of a run gets the same object.
@dataclass(slots=True)
class RunStart:
    """A run is starting. `links`: spans it was started on behalf of (e.g. the request that
    enqueued it), besides the evaluated agent span its `run.target_*` ids name. Read-only."""

    scorer: Scorer
    run: ScorerRun
    emit_score: bool = True
    links: tuple[TraceLink, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeAttempt:
    """One call to the judge model, as it happened.

    `usage` and `model_call_count` are exactly what this attempt added to the step's judge record
    (zero when the call never reached the model), so summing attempts reproduces the record.
    """

    step: StepName
    number: int
    fallback: bool
    model_id: str
    provider: str | None
    request: JudgeRequest
    duration_s: float
    reply: JudgeReply | None
    error: BaseException | None
    usage: JudgeUsage
    model_call_count: int
    transport: str | None = None


@dataclass(frozen=True, slots=True)
class JudgeCacheLookup:
    """A prompt step asked the verdict cache (core/verdict_cache.py) before calling its judge.

    `hit`: the step reused a stored answer and called no model; its judge record says `cached`
    and carries the same `saved_cost_usd` (None when the original cost was unknown)."""

    step: StepName
    model_id: str
    provider: str | None
    hit: bool
    saved_cost_usd: float | None = None


@dataclass(slots=True)
class StepOutcome:
    """A step has finished (read-only, as `RunStart`)."""

    step: StepName
    step_type: StepType
    duration_s: float
    error: BaseException | None = None
    prompt: str | None = None
    execution: JudgeExecutionSuccess | JudgeExecutionFailure | None = None
    result: Any = None


# -- listeners -------------------------------------------------------------------------------------


class RunListener:
    """Hears one run; every method is a no-op. `trace_id`, when set, becomes the result's
    `score_trace_id`."""

    __slots__ = ()

    trace_id: str | None = None

    def step_started(self, step: StepName, step_type: StepType) -> None:
        return None

    def judge_attempt_started(self, step: StepName, request: JudgeRequest) -> None:
        return None

    def judge_attempt_finished(self, attempt: JudgeAttempt) -> None:
        return None

    def judge_cache_lookup(self, lookup: JudgeCacheLookup) -> None:
        return None

    def step_finished(self, outcome: StepOutcome) -> None:
        return None

    def run_finished(self, result: ScorerRunResult, duration_s: float) -> None:
        return None

    def run_failed(self, error: BaseException, duration_s: float) -> None:
        """The run raised, or was cancelled (`error` is then not an `Exception`)."""
        return None


class Observer:
    """Subscribes to an `Observers` bus; every method is a no-op, override what you use."""

    __slots__ = ()

    def run_started(self, start: RunStart) -> RunListener | None:
        """A listener for this run's steps and judge attempts, or None to skip it."""
        return None

    def handlers(self) -> Mapping[type, Handler]:
        """The producers' events this observer hears: a function per event type (asked once,
        when it is added to a bus)."""
        return {}

    def flush(self, timeout: float | None) -> None:
        """A producer has closed and the process may be about to exit: flush what is buffered
        within `timeout` seconds. Blocking; never called on an event loop."""


def tell(listeners: Iterable[object], method: str, *args: Any) -> None:
    """`listener.<method>(*args)` for each listener (a run's listeners, or the bus's observers);
    one that raises is logged and ignored. The method is named rather than handed over as a
    closure: a run tells its listeners several events, and a closure a time costs each one."""
    for listener in listeners:
        try:
            getattr(listener, method)(*args)
        except Exception:
            logger.exception("%s of %r failed; ignored", method, listener)


class Observers:
    """One event bus: subscribed observers, the handlers they subscribed by event type, and the
    sources of pulled values by the type they report."""

    __slots__ = ("_lock", "_sources", "_tokens", "handlers", "subscribers")

    def __init__(self) -> None:
        # Both read without the lock on every event: replaced whole, never mutated.
        self.subscribers: tuple[Observer, ...] = ()
        self.handlers: Mapping[type, tuple[Handler, ...]] = {}
        self._lock = threading.Lock()
        self._sources: dict[type, dict[int, Callable[[], Any]]] = {}
        self._tokens = itertools.count()

    def __repr__(self) -> str:
        name = "OBSERVERS" if self is OBSERVERS else f"Observers at {id(self):#x}"
        return f"<{name}: {len(self.subscribers)} subscribed>"

    def add(self, observer: Observer) -> None:
        """Subscribe `observer` to the runs and to the events of its `handlers()`."""
        with self._lock:
            if not any(o is observer for o in self.subscribers):
                self.subscribers = (*self.subscribers, observer)
                self._index()

    def remove(self, observer: Observer) -> None:
        with self._lock:
            self.subscribers = tuple(o for o in self.subscribers if o is not observer)
            self._index()

    def _index(self) -> None:
        table: dict[type, tuple[Handler, ...]] = {}
        for observer in self.subscribers:
            try:
                handlers = observer.handlers()
            except Exception:
                logger.exception("observer %r failed to name its handlers; ignored", observer)
                continue
            for kind, handler in handlers.items():
                table[kind] = (*table.get(kind, ()), handler)
        self.handlers = table

    # -- runs ------------------------------------------------------------------------------------

    def start_run(
        self, scorer: Scorer, run: ScorerRun, emit_score: bool
    ) -> tuple[RunListener, ...]:
        """Ask every observer for a listener of this run; the run start carries the current
        trace links."""
        start = RunStart(scorer, run, emit_score, _LINKS.get())  # by position: every run
        listeners: list[RunListener] = []
        for observer in self.subscribers:
            try:
                listener = observer.run_started(start)
            except Exception:
                logger.exception("observer %r failed at run start; ignored", observer)
                continue
            if listener is not None:
                listeners.append(listener)
        return tuple(listeners)

    def flush(self, timeout: float | None) -> None:
        if self.subscribers:
            tell(self.subscribers, "flush", timeout)

    # -- producers' events -----------------------------------------------------------------------

    def hears(self, kind: type) -> bool:
        """Whether some observer subscribed to events of type `kind`: a producer asks before
        building a frequent event."""
        return kind in self.handlers

    def emit(self, event: object) -> None:
        """Hand `event` to every handler subscribed to its type; one that raises is logged and
        ignored."""
        handlers = self.handlers.get(type(event))
        if handlers:
            # `tell`, inlined for functions: some producers emit an event per request.
            for handler in handlers:
                try:
                    handler(event)
                except Exception:
                    logger.exception("handler %r failed; ignored", handler)

    # -- pulled values ---------------------------------------------------------------------------

    def register_source(self, kind: type[T], source: Callable[[], T | None]) -> Callable[[], None]:
        """Report `source()` (a `kind`, or None while it has nothing to report) to readers of
        `kind`; returns the function that unregisters it."""
        token = next(self._tokens)
        with self._lock:
            self._sources.setdefault(kind, {})[token] = source

        def unregister() -> None:
            with self._lock:
                self._sources.get(kind, {}).pop(token, None)

        return unregister

    def read(self, kind: type[T]) -> list[T]:
        """The current value of every source of `kind`, in registration order; a source that
        has nothing (None) or raises (logged) is skipped, so one broken source never hides the
        others."""
        with self._lock:
            sources = list(self._sources.get(kind, {}).values())
        values: list[T] = []
        for source in sources:
            try:
                value = source()
            except Exception:
                logger.exception("%s source %r failed; ignored", kind.__name__, source)
                continue
            if value is not None:
                values.append(value)
        return values


OBSERVERS = Observers()
"""The default bus: what producers emit to unless another one is made current."""

_CURRENT: ContextVar[Observers | None] = ContextVar("scorewatch_observers", default=None)
_LINKS: ContextVar[tuple[TraceLink, ...]] = ContextVar("scorewatch_run_links", default=())


def current_observers() -> Observers:
    """The bus of the current context: the one `observed_by` made current, else `OBSERVERS`."""
    observers = _CURRENT.get()
    return OBSERVERS if observers is None else observers


def observed_by(observers: Observers) -> AbstractContextManager[Observers]:
    """Runs started (and results stored) inside the block report to `observers`."""
    return _ObservedBy(observers)


def observed_context(observers: Observers, context: Context | None = None) -> Context:
    """A copy of `context` (default: an empty one) in which `observers` is the current bus:
    `observed_by` for work that runs in a context of its own from start to end (a live job),
    set once in a template the work's contexts are copied from, with no block to leave."""
    made = Context() if context is None else context.copy()
    made.run(_CURRENT.set, observers)
    return made


class _ObservedBy:
    """`observed_by`'s block: a class rather than a generator, since the live engine enters
    one for every run it scores (a `@contextmanager` generator costs about three times as
    much to make, enter and leave)."""

    __slots__ = ("_observers", "_token")

    def __init__(self, observers: Observers) -> None:
        self._observers = observers

    def __enter__(self) -> Observers:
        self._token = _CURRENT.set(self._observers)
        return self._observers

    def __exit__(self, *exc_info: object) -> None:
        _CURRENT.reset(self._token)


@contextmanager
def linked_runs(*links: TraceLink | None) -> Iterator[None]:
    """Runs started inside the block carry `links` (None ones are ignored) in their `RunStart`.

    A run scored by a queue worker was asked for by an HTTP request in another process: the
    worker links the run to that request's span this way."""
    token = _LINKS.set(_LINKS.get() + tuple(link for link in links if link is not None))
    try:
        yield
    finally:
        _LINKS.reset(token)
