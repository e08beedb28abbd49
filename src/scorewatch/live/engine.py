"""`ScoringEngine`: the one live scoring engine, behind `LiveScoring`, serve's in-process intake
and the queue workers (docs/reference-semantics.md, "Live scoring").

Per scorer and call, in order: the entry's filter (falsy or raising: `filtered`) and
deterministic sampling on the trace id, else the run id (`not_sampled`), the spend budgets when
some are set (`skipped_budget`: live/budgets.py), a deterministic run id,
then admission to the bounded `WorkQueue` (`sampled`, or `dropped_queue_full` /
`dropped_shutdown`). An accepted run is scored (`score_call`) and its result written to every
sink in turn (`Storage`); it ends as `scored`, `not_scorable` or `failed`, or is given up at
shutdown (`dropped_shutdown`). So at any time:

    sampled == scored + not_scorable + failed + queued + in_flight + (accepted, dropped at shutdown)

A run's id is deterministic, one per (scorer, trace or run, span), so the same call scored
again overwrites its row instead of adding one (`live_run_id`; `RunIdIssuer` tells apart repeated
calls in one span). A call carrying more than `OFFLOAD_CHARS` characters of text has its
scorers' synchronous function steps run in the process-wide step pool (`core.offload`), so
model-free scoring of a megabyte of text never stalls a loop that serves others; a smaller call
scores on the loop, as handing a step to a thread costs more than scoring a few kilobytes.

Threads: a run executes on the loop named when it is enqueued (a dedicated scoring thread's),
else on the loop of the code that enqueues it, else on scorewatch's background loop. Enqueueing,
counting and stats are thread-safe; a run's `done` future is resolved on its own loop, whichever
loop scored the run. Telemetry hears decisions and sink errors as events on the engine's bus
(`live.events`, `sinks.delivery.SinkFailed`; live never imports telemetry), and reads the
queue's depth and runs in flight from it (`QueueDepth`) when it collects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from random import getrandbits, random
from typing import Any, Final
from uuid import uuid4

from .._throttled_log import ThrottledLog
from ..core.call import AgentCall
from ..core.errors import RUN_FAILED_PREFIX
from ..core.events import Observers, current_observers, observed_context
from ..core.offload import offload_function_steps, shared_step_pool
from ..core.pipeline import run_scorer
from ..core.result import ScorerRun
from ..core.scorer import Scorer
from ..judge.errors import QUOTABLE_JUDGE_ERRORS
from ..privacy import PrivacyPolicy, redacting
from ..sinks.base import ScoreSink
from ..sinks.delivery import Delivery, SinkRetry, Storage
from ..sinks.record import ScoreRecord
from .budgets import Budgets, Hold
from .entry import Decision, LiveScorerEntry, fraction_of, in_review_sample
from .events import LIVE_COUNTS, Decided, LiveDecision, QueueDepth
from .work_queue import Job, JobOutcome, WorkQueue

__all__ = [
    "OFFLOAD_CHARS",
    "Counts",
    "Run",
    "RunIdIssuer",
    "ScoringEngine",
    "call_is_heavy",
    "decided_event",
    "live_run_id",
    "log_failed_run",
    "score_call",
]

logger = logging.getLogger("scorewatch.live")

# How long closing waits, after the drain budget, for runs that are storing their results.
_COMMIT_GRACE_S = 10.0

# About 3 ms of the heaviest model-free scorer on the loop, and about 50 times what handing a
# step to a thread costs.
OFFLOAD_CHARS = 4096


_ADMISSION: dict[str, LiveDecision] = {
    "accepted": "sampled",
    "queue_full": "dropped_queue_full",
    "closed": "dropped_shutdown",
}


@dataclass(frozen=True, slots=True)
class Run:
    """One accepted scorer run. `done`, when given, receives the stored result (cancelled when
    the run is not stored); `tag` is the owner's own bookkeeping, handed back when it ends."""

    scorer: Scorer
    run_id: str
    call: AgentCall
    done: asyncio.Future[ScoreRecord] | None = None
    tag: Any = None
    hold: Hold | None = None
    """What the run reserved of the spend budgets, settled with its cost when it ends."""


# Decision events are immutable and few (scorers times decisions): one of each is made, not
# one per decision (a frozen dataclass costs a microsecond to build).
@functools.lru_cache(maxsize=4096)
def decided_event(scorer_id: str, decision: LiveDecision) -> Decided:
    """The `Decided` event of `decision` for `scorer_id` (shared: events are immutable)."""
    return Decided(scorer_id, decision)


class Counts:
    """Decision and outcome counts since start (every `LIVE_COUNTS` key, then `extra` keys), all
    zero at first; a decision is counted and told to the event bus `observers` together
    (default: the bus current at construction)."""

    def __init__(self, *extra: str, observers: Observers | None = None) -> None:
        self.observers = current_observers() if observers is None else observers
        self._counts = dict.fromkeys((*LIVE_COUNTS, *extra), 0)
        self._lock = threading.Lock()

    def add(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[key] += amount

    def add_each(self, keys: Iterable[str]) -> None:
        """`add(key)` for each of `keys`, under one lock."""
        with self._lock:
            counts = self._counts
            for key in keys:
                counts[key] += 1

    def decided(self, scorer_id: str, decision: LiveDecision) -> None:
        with self._lock:
            self._counts[decision] += 1
        observers = self.observers
        if observers.hears(Decided):
            observers.emit(decided_event(scorer_id, decision))

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


# -- one run: its id, and scoring it ------------------------------------------------------------


def live_run_id(scorer_id: str, call: AgentCall, *, run_id_sent: bool = True) -> str:
    """`scoring-<scorerId>-<traceId|runId>-<spanId|entityId>` of the call (its entity is its
    target); a random uuid if both are missing. `run_id_sent=False`: the call's run id was made
    up by whoever admitted it, not sent, so it names nothing (as if the call had none)."""
    first = call.trace_id or (call.run_id if run_id_sent else None)
    second = call.span_id or call.target
    if not first and not second:
        return str(uuid4())
    return f"scoring-{scorer_id}-{first or ''}-{second or ''}"


class RunIdIssuer:
    """Hands out live run ids, telling apart repeated calls that share a trace and span.

    Two watched calls inside one span would otherwise get the same id and the second result
    would overwrite the first in an upserting sink. The n-th repeat (n >= 2) of an id within the
    last `memory` ids gets the suffix `-n`. Redelivery of one run reuses the id it was issued.
    """

    def __init__(self, memory: int = 8192) -> None:
        self._memory = memory
        self._seen: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def issue(self, base: str) -> str:
        with self._lock:
            count = self._seen.pop(base, 0) + 1
            self._seen[base] = count
            if len(self._seen) > self._memory:
                self._seen.popitem(last=False)
        return base if count == 1 else f"{base}-{count}"


def _agent_run_id() -> str:
    """The run id of a call whose agent gave none: random, 32 hex digits."""
    return f"{getrandbits(128):032x}"


# Neither a `Mapping` nor a `Sequence`: `call_is_heavy` counts them 8 without asking.
_SCALARS: Final = frozenset((int, float, bool, type(None)))


def call_is_heavy(call: AgentCall, limit: int = OFFLOAD_CHARS) -> bool:
    """Whether the texts a scorer reads (input, output, ground truth) hold more than `limit`
    characters. Stops counting once over the limit, so a huge call costs no more than a
    small one."""
    first, second, truth = call.input, call.output, call.ground_truth
    if truth is None and type(first) is str and type(second) is str:
        # The common call, counted as the walk below counts it (8 for the None).
        return len(first) + len(second) + 8 > limit
    # The count (each text's length, each container's length, 8 for anything else) only
    # falls, so its order does not change the answer: a container's texts and scalars are
    # counted where it is read, and only containers and values of other types wait in
    # `pending`. A structured call (a trace's run: ~120 values, most of them texts) costs a
    # step per value that way, not a push, a pop and a dispatch each
    # (tests/live/test_live_heavy_walk.py holds it to the walk by ABCs).
    budget = limit
    pending: list[Any] = [first, second, truth]
    while pending:
        value = pending.pop()
        # Exact types first, counted as the checks after them count them: an ABC check of a
        # number or None costs several times the rest of its step.
        kind = type(value)
        if kind is dict:
            budget -= len(value)
            items: Iterable[Any] = value.values()
        elif kind is list:
            budget -= len(value)
            items = value
        elif kind is str:
            budget -= len(value)
            items = ()
        elif kind in _SCALARS:
            budget -= 8
            items = ()
        elif isinstance(value, str):
            budget -= len(value)
            items = ()
        elif isinstance(value, Mapping):
            budget -= len(value)
            items = value.values()
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            budget -= len(value)
            items = value
        else:
            budget -= 8
            items = ()
        # Before its items: a container of more items than `limit` is never walked.
        if budget < 0:
            return True
        for item in items:
            kind = type(item)
            if kind is str:
                budget -= len(item)
            elif kind in _SCALARS:
                budget -= 8
            else:
                pending.append(item)
    return budget < 0


async def score_call(
    scorer: Scorer,
    call: AgentCall,
    run_id: str,
    privacy: PrivacyPolicy | None = None,
    *,
    review_rate: float = 0.0,
) -> ScoreRecord:
    """Run `scorer` on `call` under `run_id`; a raised `Exception` becomes a failed result.
    With a `privacy` policy, the judge reads the call as it is, and the record, spans and events
    of the run are redacted with one redactor. A successful run in the review sample of
    `review_rate` (`in_review_sample`) is marked for review in its record, so the mark is stored
    with the score row."""
    # A small call leaves the step executor as the context has it (none, unless the caller
    # installed one), instead of paying a context manager per call to set it to None.
    heavy = call_is_heavy(call)
    redaction = privacy.start() if privacy is not None and privacy.enabled else None
    # A run made of a call whose typed fields were checked, under a text run id, holds what
    # `check_run` accepts: `ScorerRun.of_call` adds only text and a mapping keyed by text.
    checked = call.fields_checked and type(run_id) is str
    try:
        # The run is made here, once: `Scorer.run` would copy a run object it is handed.
        if not heavy and redaction is None:  # the common call: no context to enter
            result = await run_scorer(scorer, ScorerRun.of_call(call, run_id), True, checked)
        else:
            with (
                offload_function_steps(shared_step_pool()) if heavy else nullcontext(),
                redacting(redaction) if redaction is not None else nullcontext(),
            ):
                run = ScorerRun.of_call(call, run_id)
                result = await run_scorer(scorer, run, True, checked)
    except Exception as error:
        return ScoreRecord.failure(run_id, scorer, call, error, redaction=redaction)
    review = review_rate > 0 and in_review_sample(run_id, review_rate)
    return ScoreRecord.success(run_id, scorer, call, result, redaction=redaction, review=review)


def log_failed_run(warn: ThrottledLog, result: ScoreRecord, *, quote: bool) -> None:
    """A warning for a failed run, at most once a minute per scorer and error code (a judge
    that rejects its key fails every run alike).

    `quote` logs the error text (a library user's own process). Otherwise (a service, whose
    error texts may quote its clients' content) the line names the scorer, the code and the
    error class, and only a judge provider's own message, which scorewatch writes from the
    HTTP status, the model id and the key's variable (`QUOTABLE_JUDGE_ERRORS`): never content,
    never a key."""
    code = result.error_code or "-"
    key = f"run:{result.scorer_id}:{code}:{result.error_type}"
    args: tuple[str | None, ...]
    if quote:  # as it is kept: redacted under a privacy policy
        message, args = "live scorer %r failed on run %s: %s", (result.kept(result.error),)
    elif result.error_type in QUOTABLE_JUDGE_ERRORS:
        detail = (result.error or "").removeprefix(RUN_FAILED_PREFIX)
        message, args = "scorer %r failed on run %s: %s (%s): %s", (code, result.error_type, detail)
    else:
        message, args = "scorer %r failed on run %s: %s (%s)", (code, result.error_type)
    warn.warning(key, message, result.scorer_id, result.id, *args)


# -- the engine --------------------------------------------------------------------------------


class ScoringEngine:
    """Scores accepted runs in the background: at most `max_concurrency` at once, at most
    `max_queue` waiting (beyond that a run is refused and counted).

    `on_stored(*seconds)` hears how long each stored run held its slot (those of runs stored
    together in one call); `on_finished(finished)` hears every accepted run end, once, as
    `(run, outcome)` in a list of the runs that ended together.
    `quote_errors` puts error texts and tracebacks in the logs (a library user's own process);
    a service logs error types only, as the texts may quote its clients' content. `observers`
    is the event bus the engine, its runs and sink writes report to (default: that of `counts`,
    else the bus current at construction). `privacy`: what the engine's records, spans, events
    and logs redact (the judge reads the calls as they are). `budgets`: the spend budgets
    sampling obeys (live/budgets.py); their readings are reported on the bus.
    """

    def __init__(
        self,
        entries: Mapping[str, LiveScorerEntry],
        *,
        sinks: Sequence[ScoreSink] = (),
        max_concurrency: int = 32,
        max_queue: int = 10_000,
        sink_retry: SinkRetry | None = None,
        quote_errors: bool = True,
        counts: Counts | None = None,
        on_stored: Callable[..., None] | None = None,
        on_finished: Callable[[list[tuple[Run, JobOutcome]]], None] | None = None,
        observers: Observers | None = None,
        privacy: PrivacyPolicy | None = None,
        budgets: Budgets | None = None,
    ) -> None:
        self.entries: dict[str, LiveScorerEntry] = dict(entries)
        self.budgets = budgets if budgets else None
        self.privacy = privacy
        self.counts = counts if counts is not None else Counts(observers=observers)
        # The bus telemetry hears this engine on; its runs and sink writes report there too.
        self.observers = self.counts.observers
        self._warn = ThrottledLog(logger)
        self.storage = Storage(sinks, retry=sink_retry, quote_errors=quote_errors, warn=self._warn)
        self._quote = quote_errors
        self._on_stored = on_stored
        self._on_finished = on_finished
        # Bound once: a sink's writer acknowledges the runs of a batch by their callback.
        self._acknowledge = self._runs_stored
        self._ids = RunIdIssuer()
        self._warm_up: concurrent.futures.Future[None] | None = None
        if any(
            entry.scorer.judge is not None and isinstance(entry.scorer.judge.model, str)
            for entry in self.entries.values()
        ):  # a litellm model id: warm litellm up so the first judged run does not import it
            from ..judge.litellm_judge import warm_up_in_background

            self._warm_up = warm_up_in_background()
        self.max_queue = max_queue
        self.queue: WorkQueue[Run] = WorkQueue(
            self._execute,
            max_queue=max_queue,
            max_concurrency=max_concurrency,
            on_finished=self._finished,
            eager=_model_free,
            # Each job runs in a copy of this context from start to end, scoring and storing:
            # its runs and sink writes report to this engine's bus without a block per run.
            context=observed_context(self.observers),
        )
        self._unregister_depth = self.observers.register_source(
            # Runs in flight are read with the depth (a run tells no event as it starts and
            # ends): the queue counts them anyway.
            QueueDepth,
            lambda: QueueDepth(self.queue.queued, self.queue.in_flight),
        )
        # For the unkeyed fast path of `offer`: without filters, and when every scorer samples
        # at a rate, a call whose draw is at or above the highest rate is taken by none of them
        # (the ceiling is 2 when some scorer takes every call: no draw reaches it).
        rates = [entry.sampling.rate for entry in self.entries.values()]
        self._unfiltered = all(entry.filter is None for entry in self.entries.values())
        self._ceiling = 2.0
        if rates and None not in rates:
            self._ceiling = max(rate for rate in rates if rate is not None)
        self._none_sampled: dict[str, LiveDecision] = dict.fromkeys(self.entries, "not_sampled")
        self._unregister_budgets: Callable[[], None] | None = None
        if self.budgets is not None:
            # A budget counts every call its scorers see, so none is decided in bulk.
            self._ceiling = 2.0
            self._unregister_budgets = self.budgets.report_to(
                self.observers,
                {entry.scorer: entry.sampling.rate for entry in self.entries.values()},
            )

    # -- state -----------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.queue.closed

    def stats(self) -> dict[str, int]:
        """The counts, then the queue's `queued` and `in_flight` now."""
        snapshot = self.counts.snapshot()
        snapshot["queued"] = self.queue.queued
        snapshot["in_flight"] = self.queue.in_flight
        return snapshot

    # -- deciding and admitting ------------------------------------------------------------------

    def offer(self, call: AgentCall) -> dict[str, LiveDecision]:
        """Offer one call to every scorer; the decision per entry name. Never waits. A call
        without a run id is given one when some scorer may take it. The all-not-sampled answer
        is shared between calls: copy it before handing it out."""
        if call.run_id:
            return self._decide(call, None)
        draw = self._unkeyed_draw() if not call.trace_id else None
        if draw is not None and draw >= self._ceiling:
            return self._not_sampled_by_all()
        return self._decide(replace(call, run_id=_agent_run_id()), draw)

    def offer_watched(
        self, input: Any, output: Any, target: str, trace_id: str | None, span_id: str | None
    ) -> dict[str, LiveDecision]:
        """`offer` for a watched call, which is known by these alone: the call is built only
        when some scorer may take it, so a call no scorer samples costs no object."""
        draw = self._unkeyed_draw() if not trace_id else None
        if draw is not None and draw >= self._ceiling:
            return self._not_sampled_by_all()
        # The call's first six fields, in their order: input, output, target, trace_id,
        # span_id, run_id.
        call = AgentCall(input, output, target, trace_id, span_id, _agent_run_id())
        return self._decide(call, draw)

    def _unkeyed_draw(self) -> float | None:
        """For a call with neither a trace id nor a run id: nothing to hash, as the key would
        be a fresh random run id, whose hash is a uniform draw. So draw once per call (nested
        rates stay nested, as with a hash), unless a filter needs the call first (None)."""
        return random() if self._unfiltered else None

    def _decide(self, call: AgentCall, draw: float | None) -> dict[str, LiveDecision]:
        sample_key = call.trace_id or call.run_id or ""  # a run id is set by now
        decisions: dict[str, LiveDecision] = {}
        budgets = self.budgets
        now = budgets.now() if budgets is not None else 0.0  # one reading for the whole call
        for key, entry in self.entries.items():
            if draw is not None:
                rate = entry.sampling.rate
                decided: Decision = "sampled" if rate is None or draw < rate else "not_sampled"
            else:
                decided = entry.decide(call, sample_key, self._warn)
            scorer = entry.scorer
            decision: LiveDecision = decided
            hold: Hold | None = None
            if budgets is not None and decided != "filtered" and budgets.governs(scorer):
                fraction = draw if draw is not None else fraction_of(sample_key)
                decision, hold = budgets.admit(scorer.id, fraction, entry.sampling.rate, now)
            if decision == "sampled":
                run_id = self._ids.issue(live_run_id(scorer.id, call))
                decision = self.enqueue(Run(scorer, run_id, call, hold=hold))
                if decision != "sampled" and budgets is not None:
                    budgets.release(hold)
            self.counts.decided(scorer.id, decision)
            decisions[key] = decision
        return decisions

    def _not_sampled_by_all(self) -> dict[str, LiveDecision]:
        self.counts.add("not_sampled", len(self.entries))
        if self.observers.hears(Decided):
            for entry in self.entries.values():
                self.observers.emit(decided_event(entry.scorer.id, "not_sampled"))
        return self._none_sampled

    def enqueue(self, run: Run, loop: asyncio.AbstractEventLoop | None = None) -> LiveDecision:
        """Queue an accepted run, to run on `loop` (see the module's doc), and return the
        decision: `sampled`, or `dropped_queue_full` / `dropped_shutdown` when the queue refused
        it. Not counted: the caller counts the decision. Any thread may call it."""
        return _ADMISSION[self.queue.offer(run, loop=loop)]

    # -- running ---------------------------------------------------------------------------------

    async def _execute(self, job: Job[Run]) -> JobOutcome | None:
        run = job.payload
        delivery = job.deliveries
        started = time.perf_counter()  # a run waiting for its turn holds its slot too
        warm_up = self._warm_up
        if warm_up is not None and run.scorer.has_judge:
            if not warm_up.done():  # the loop waits for it, never imports litellm itself
                await asyncio.wrap_future(warm_up)
            self._warm_up = None
        # The job's context (the queue's copy of `observed_context`) has this engine's bus
        # current from start to end: its run and its sink writes report there.
        entry = self.entries.get(run.scorer.id)
        rate = 0.0 if entry is None else entry.review_rate
        result = await score_call(run.scorer, run.call, run.run_id, self.privacy, review_rate=rate)
        if run.hold is not None and self.budgets is not None:
            await self.budgets.asettle(run.hold, result)
        if result.status == "failed":
            self._run_failed(run, result)
        if not self.queue.begin_commit(job):
            return result.outcome  # given up at shutdown meanwhile: dropped, not stored

        # A sink's writer that acknowledges by callback ends the run there, with the others of
        # its transaction (`_runs_stored`): no coroutine waits for the commit, and the loop is
        # not woken for it.
        # Urgent (no linger in the writer) when a client waits for this run, or runs wait
        # for the slot this one holds until it is stored.
        if self.storage.store_then(
            result,
            self._acknowledge,
            (job, delivery, started, result),
            urgent=run.done is not None or self.queue.waiting_for_slots,
        ):
            return None
        stored_as = await self.storage.store(result)
        seconds, outcome = self._stored(run, started, result, stored_as)
        if self._on_stored is not None:
            self._on_stored(seconds)
        return outcome

    def _runs_stored(self, stored: list[tuple[Any, Delivery | None]]) -> None:
        """Runs whose results a sink's writer stored together (`Storage.store_then`): settled
        in one go, on the writer's thread (or the loop that stored them)."""
        settled: list[tuple[Job[Run], int, JobOutcome]] = []
        durations: list[float] = []
        for (job, delivery, started, result), stored_as in stored:
            try:
                seconds, outcome = self._stored(job.payload, started, result, stored_as)
            except Exception:  # stored all the same: it must end, whatever its bookkeeping
                logger.exception("live scoring bookkeeping failed; ignored")
                outcome = (result if stored_as is None else stored_as.stored).outcome
            else:
                durations.append(seconds)
            settled.append((job, delivery, outcome))
        if self._on_stored is not None and durations:
            try:
                self._on_stored(*durations)
            except Exception:
                logger.exception("live scoring bookkeeping failed; ignored")
        self.queue.settle_all(settled)

    def _stored(
        self, run: Run, started: float, result: ScoreRecord, delivery: Delivery | None
    ) -> tuple[float, JobOutcome]:
        """How long a run whose result the sinks took held its slot (the slot is held until the
        result is stored: that is what a run costs), and what it ends as. `delivery` None: every
        sink holds `result` as it is."""
        stored = result if delivery is None else delivery.stored
        if run.done is not None:
            _settle(run.done, None if delivery is not None and delivery.dropped else stored)
        return time.perf_counter() - started, stored.outcome

    def _run_failed(self, run: Run, result: ScoreRecord) -> None:
        log_failed_run(self._warn, result, quote=self._quote)

    def _finished(self, finished: list[tuple[Job[Run], JobOutcome]]) -> None:
        self.counts.add_each([outcome for _job, outcome in finished])
        runs = [(job.payload, outcome) for job, outcome in finished]
        for run, outcome in runs:
            if outcome == "dropped_shutdown":
                if self.budgets is not None:
                    # Never ran: nothing spent (after `settle`: none).
                    self.budgets.release(run.hold)
                self.observers.emit(decided_event(run.scorer.id, "dropped_shutdown"))
                if run.done is not None:
                    _settle(run.done, None)
        if self._on_finished is not None:
            self._on_finished(runs)

    # -- draining and shutdown -------------------------------------------------------------------

    async def drain(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - a deadline
        """Wait until every accepted run has finished and been stored; False on timeout."""
        return await self.queue.drain(timeout)

    def drain_blocking(self, timeout: float | None) -> bool:
        """`drain` for code without a running loop (close(), atexit, signal handlers)."""
        return self.queue.drain_blocking(timeout)

    async def shutdown(self, timeout: float | None) -> int:  # noqa: ASYNC109 - a drain budget
        """Refuse new runs, finish the accepted ones within `timeout` seconds, give up (and count
        as `dropped_shutdown`) the rest; returns how many were given up. Runs already storing
        their results finish: one counted as dropped is never stored, one stored never counted
        as dropped. A second shutdown only waits for the queue to drain."""
        if self.queue.closed:
            await self.queue.drain(timeout)
            return 0
        self.queue.close()
        if await self.queue.drain(timeout):
            return 0
        given_up = self._give_up(timeout)
        await self.queue.drain(_COMMIT_GRACE_S)
        return given_up

    def shutdown_blocking(self, timeout: float | None) -> int:
        """`shutdown` for code without a running loop."""
        if self.queue.closed:
            self.queue.drain_blocking(timeout)
            return 0
        self.queue.close()
        if self.queue.drain_blocking(timeout):
            return 0
        given_up = self._give_up(timeout)
        self.queue.drain_blocking(_COMMIT_GRACE_S)
        return given_up

    def _give_up(self, timeout: float | None) -> int:
        self.storage.stop_retrying()  # shutdown's budget is spent: stop waiting for sinks
        given_up = self.queue.abandon_all()
        if given_up:
            logger.warning(
                "%d accepted run(s) not finished within %ss of shutdown; counted as "
                "dropped_shutdown",
                given_up,
                timeout,
            )
        return given_up

    def _stop_reporting(self) -> None:
        self._unregister_depth()
        if self._unregister_budgets is not None:
            self._unregister_budgets()

    async def aclose(self) -> None:
        """Close the sinks and stop reporting the queue depth (after `shutdown`)."""
        self._stop_reporting()
        await self.storage.aclose()

    def close_blocking(self, timeout: float | None) -> None:
        """`aclose` for code without a running loop."""
        self._stop_reporting()
        self.storage.close_blocking(timeout)


def _model_free(run: Run) -> bool:
    """A run the queue starts eagerly: no judge to call and no budget to settle, so it usually
    finishes without suspending (`WorkQueue`)."""
    return not run.scorer.has_judge and run.hold is None


def _settle(done: asyncio.Future[ScoreRecord], result: ScoreRecord | None) -> None:
    """Resolve `done` on its own loop (None: not stored, so cancelled), from any thread."""

    def resolve() -> None:
        if done.done():
            return
        if result is None:
            done.cancel()
        else:
            done.set_result(result)

    loop = done.get_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        resolve()
    else:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits any more
            loop.call_soon_threadsafe(resolve)
