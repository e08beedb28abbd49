"""The event bus: how add-ons (telemetry, cost collectors, the demo) observe scorewatch.

Producers at every layer emit events to an `Observers` object and never learn who listens; an
`Observer` subscribes with `Observers.add` and overrides the methods of the events it wants (the
others are no-ops). The bus sits in `core`, the lowest layer that emits, so run lifecycle (core),
sampling decisions, in-flight runs and sink errors (live) and queue events (server) all reach one
place, and nothing below telemetry ever imports it.

Runs. At the start of every run each observer is asked for a `RunListener` of that run (or
None). The listener then hears the run's steps and judge attempts, in order, on the task running
the scorer, so it may make its own context current between a `*_started` call and the matching
`*_finished` call. The run start carries the trace links the run was started under
(`linked_runs`), so a listener can link the run's span without asking anyone else.

Gauges are pulled, not pushed: a queue registers a zero-argument source (its depth, its latest
stream reading) and keeps the function that unregisters it; a gauge reads every source when it is
collected.

`OBSERVERS` is the process's default bus (as `prometheus_client.REGISTRY` is the default
registry). A test or an embedding application makes its own `Observers` current for the runs it
starts with `observed_by`, and hands it to the components that take one (`LiveScoring`,
`telemetry.instrument`). With nobody subscribed an event costs one tuple check; an observer or
listener that raises is logged and ignored: it never breaks a run.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args

from ..judge.protocol import JudgeReply, JudgeRequest
from ..judge.usage import JudgeUsage
from .steps import StepName, StepType

if TYPE_CHECKING:
    from .records import JudgeExecutionFailure, JudgeExecutionSuccess
    from .result import ScorerRun, ScorerRunResult
    from .scorer import Scorer

__all__ = [
    "LIVE_COUNTS",
    "OBSERVERS",
    "JudgeAttempt",
    "LabelReadings",
    "LiveDecision",
    "Observer",
    "Observers",
    "QueueGauges",
    "RunListener",
    "RunStart",
    "StepOutcome",
    "TraceCounts",
    "TraceLink",
    "current_observers",
    "linked_runs",
    "notify",
    "observed_by",
]

logger = logging.getLogger("scorewatch.events")

T = TypeVar("T")

# -- event payloads --------------------------------------------------------------------------------

LiveDecision = Literal[
    "sampled", "not_sampled", "filtered", "dropped_queue_full", "dropped_shutdown"
]
LIVE_COUNTS: tuple[str, ...] = (*get_args(LiveDecision), "scored", "not_scorable", "failed")
"""What a live queue counts: every decision, then how accepted runs ended."""


@dataclass(frozen=True, slots=True)
class TraceLink:
    """A span a run should link to, by its W3C hex ids (core never sees OpenTelemetry types)."""

    trace_id: str
    span_id: str

    @classmethod
    def of(cls, trace_id: int, span_id: int) -> TraceLink:
        return cls(format(trace_id, "032x"), format(span_id, "016x"))


@dataclass(frozen=True, slots=True)
class RunStart:
    """A run is starting. `links`: spans it was started on behalf of (e.g. the request that
    enqueued it), besides the evaluated agent span its `run.target_*` ids name."""

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
class StepOutcome:
    step: StepName
    step_type: StepType
    duration_s: float
    error: BaseException | None = None
    prompt: str | None = None
    execution: JudgeExecutionSuccess | JudgeExecutionFailure | None = None
    result: Any = None


@dataclass(frozen=True, slots=True)
class QueueGauges:
    """One reading of a stream: `backlog` accepted entries not yet acknowledged, `pending`
    delivered to a worker and not yet acknowledged, `lag` not yet delivered to any worker,
    `dead_letters` entries in the dead-letter stream."""

    stream: str
    backlog: int
    pending: int
    lag: int
    dead_letters: int


@dataclass(slots=True)
class TraceCounts:
    """Cumulative counts of a trace intake (serve's `POST /v1/traces`).

    `spans_received`: spans that arrived; `spans_dropped`: spans not kept, by reason
    (`max_bytes`, `max_spans_per_trace`, `duplicate`, `own`: scorewatch's own telemetry);
    `traces_evicted`: traces given up before completing, by reason (`max_traces`, `max_age`);
    `runs`: what became of each selected span, by outcome (`admitted` for scoring, or
    `no_content`, `no_output`, `nested`, `evicted`, `invalid_target`, `queue_full`,
    `shutdown`, `unavailable`)."""

    spans_received: int = 0
    spans_dropped: Counter[str] = field(default_factory=Counter)
    traces_evicted: Counter[str] = field(default_factory=Counter)
    runs: Counter[str] = field(default_factory=Counter)

    def add(self, other: TraceCounts) -> None:
        self.spans_received += other.spans_received
        self.spans_dropped.update(other.spans_dropped)
        self.traces_evicted.update(other.traces_evicted)
        self.runs.update(other.runs)


@dataclass(frozen=True, slots=True)
class LabelReadings:
    """What a label intake (serve's `POST /v1/labels`) reports: `labels`, labels stored per
    scorer id by this process (cumulative); `agreement`, the latest agreement of each scorer
    version with its stored labels, (scorer id, scorer version, measure) -> value; `review`, the
    runs of each scorer's review sample: (scorer id, state) -> count, state `marked`, `labelled`
    or `pending`."""

    labels: Mapping[str, int]
    agreement: Mapping[tuple[str, str, str], float]
    review: Mapping[tuple[str, str], int] = field(default_factory=dict)


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

    def decision(self, scorer_id: str, decision: LiveDecision) -> None:
        """One sampling/queueing decision for one scorer on one piece of live traffic."""

    def in_flight(self, delta: int) -> None:
        """+1 when a live evaluation starts running, -1 when it ends (success or failure)."""

    def sink_error(self, sink: str) -> None:
        """A sink (by its low-cardinality name, e.g. `sqlite`) failed to write a result."""

    def redelivered(self, stream: str, count: int) -> None:
        """`count` entries of `stream` were claimed from a consumer that held them too long."""

    def dead_lettered(self, stream: str, reason: str) -> None:
        """One entry of `stream` moved to the dead-letter stream; `reason` is a fixed label."""

    def flush(self, timeout: float | None) -> None:
        """Live scoring has closed and the process may be about to exit: flush what is buffered
        within `timeout` seconds. Blocking; never called on an event loop."""


def notify(listeners: Iterable[T], call: Callable[[T], object], what: str = "listener") -> None:
    """`call(each listener)`; one that raises is logged and ignored."""
    for listener in listeners:
        try:
            call(listener)
        except Exception:
            logger.exception("%s %r failed; ignored", what, listener)


class _Pulled(Generic[T]):
    """Registered zero-argument sources; one that raises is logged and skipped, so one broken
    queue never hides the others."""

    __slots__ = ("_lock", "_sources", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._sources: dict[int, Callable[[], T]] = {}
        self._lock = threading.Lock()

    def register(self, source: Callable[[], T]) -> Callable[[], None]:
        key = id(source)
        with self._lock:
            self._sources[key] = source

        def unregister() -> None:
            with self._lock:
                if self._sources.get(key) is source:
                    del self._sources[key]

        return unregister

    def read(self) -> list[T]:
        """Every registered source's current value, in registration order."""
        with self._lock:
            sources = list(self._sources.values())
        values: list[T] = []
        for source in sources:
            try:
                values.append(source())
            except Exception:
                logger.exception("%s source %r failed; ignored", self._what, source)
        return values


class Observers:
    """One event bus: subscribed observers, and the gauge sources they pull from."""

    __slots__ = ("_depths", "_gauges", "_labels", "_lock", "_traces", "subscribers")

    def __init__(self) -> None:
        # Read without the lock on every event: replaced whole, never mutated.
        self.subscribers: tuple[Observer, ...] = ()
        self._lock = threading.Lock()
        self._depths: _Pulled[int] = _Pulled("live queue depth")
        self._gauges: _Pulled[QueueGauges | None] = _Pulled("queue gauge")
        self._traces: _Pulled[TraceCounts] = _Pulled("trace intake counts")
        self._labels: _Pulled[LabelReadings] = _Pulled("label readings")

    def __repr__(self) -> str:
        name = "OBSERVERS" if self is OBSERVERS else f"Observers at {id(self):#x}"
        return f"<{name}: {len(self.subscribers)} subscribed>"

    def add(self, observer: Observer) -> None:
        with self._lock:
            if not any(o is observer for o in self.subscribers):
                self.subscribers = (*self.subscribers, observer)

    def remove(self, observer: Observer) -> None:
        with self._lock:
            self.subscribers = tuple(o for o in self.subscribers if o is not observer)

    # -- runs ------------------------------------------------------------------------------------

    def start_run(
        self, scorer: Scorer, run: ScorerRun, emit_score: bool
    ) -> tuple[RunListener, ...]:
        """Ask every observer for a listener of this run; the run start carries the current
        trace links."""
        start = RunStart(scorer=scorer, run=run, emit_score=emit_score, links=_LINKS.get())
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

    # -- live and queue events -------------------------------------------------------------------

    def decision(self, scorer_id: str, decision: LiveDecision) -> None:
        if self.subscribers:
            notify(self.subscribers, lambda o: o.decision(scorer_id, decision), "observer")

    def in_flight(self, delta: int) -> None:
        if self.subscribers:
            notify(self.subscribers, lambda o: o.in_flight(delta), "observer")

    def sink_error(self, sink: str) -> None:
        if self.subscribers:
            notify(self.subscribers, lambda o: o.sink_error(sink), "observer")

    def redelivered(self, stream: str, count: int) -> None:
        if self.subscribers and count > 0:
            notify(self.subscribers, lambda o: o.redelivered(stream, count), "observer")

    def dead_lettered(self, stream: str, reason: str) -> None:
        if self.subscribers:
            notify(self.subscribers, lambda o: o.dead_lettered(stream, reason), "observer")

    def flush(self, timeout: float | None) -> None:
        if self.subscribers:
            notify(self.subscribers, lambda o: o.flush(timeout), "observer")

    # -- pulled gauges ---------------------------------------------------------------------------

    def register_queue_depth(self, source: Callable[[], int]) -> Callable[[], None]:
        """Make `source()` count in the live queue depth; returns the function that
        unregisters it."""
        return self._depths.register(source)

    def queue_depth(self) -> int:
        return sum(self._depths.read())

    def register_queue_gauges(self, source: Callable[[], QueueGauges | None]) -> Callable[[], None]:
        """Report `source()` (a stream's latest reading, None before the first) in the queue
        gauges; returns the function that unregisters it."""
        return self._gauges.register(source)

    def queue_gauges(self) -> list[QueueGauges]:
        """The latest reading of every registered queue, one per stream (a process that both
        serves and works one stream reports it once)."""
        readings: dict[str, QueueGauges] = {}
        for reading in self._gauges.read():
            if reading is not None:
                readings[reading.stream] = reading
        return list(readings.values())

    def register_trace_counts(self, source: Callable[[], TraceCounts]) -> Callable[[], None]:
        """Report `source()` (a trace intake's cumulative counts) in the trace counters;
        returns the function that unregisters it."""
        return self._traces.register(source)

    def register_labels(self, source: Callable[[], LabelReadings]) -> Callable[[], None]:
        """Report `source()` (a label intake's counts and agreement) in the label metrics;
        returns the function that unregisters it."""
        return self._labels.register(source)

    def label_readings(self) -> list[LabelReadings]:
        return self._labels.read()

    def trace_counts(self) -> TraceCounts:
        """The sum over every registered trace intake."""
        total = TraceCounts()
        for counts in self._traces.read():
            total.add(counts)
        return total


OBSERVERS = Observers()
"""The default bus: what producers emit to unless another one is made current."""

_CURRENT: ContextVar[Observers | None] = ContextVar("scorewatch_observers", default=None)
_LINKS: ContextVar[tuple[TraceLink, ...]] = ContextVar("scorewatch_run_links", default=())


def current_observers() -> Observers:
    """The bus of the current context: the one `observed_by` made current, else `OBSERVERS`."""
    observers = _CURRENT.get()
    return OBSERVERS if observers is None else observers


@contextmanager
def observed_by(observers: Observers) -> Iterator[Observers]:
    """Runs started (and results stored) inside the block report to `observers`."""
    token = _CURRENT.set(observers)
    try:
        yield observers
    finally:
        _CURRENT.reset(token)


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
