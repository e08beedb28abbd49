"""`ScoringEngine`: the one live scoring engine, behind `LiveScoring`, serve's in-process intake
and the queue workers (docs/reference-semantics.md, "Live scoring").

Per scorer and call, in order: the entry's filter (falsy or raising: `filtered`) and
deterministic sampling on the trace id, else the run id (`not_sampled`), a deterministic run id,
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
loop scored the run. Telemetry hears decisions, in-flight changes, queue depth and sink errors
as events on the engine's bus (`core.events`; live never imports telemetry).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from random import getrandbits, random
from typing import Any
from uuid import uuid4

from .._throttled_log import ThrottledLog
from ..core.errors import RUN_FAILED_PREFIX
from ..core.events import LIVE_COUNTS, LiveDecision, Observers, current_observers, observed_by
from ..core.offload import offload_function_steps, shared_step_pool
from ..core.scorer import Scorer
from ..judge.errors import QUOTABLE_JUDGE_ERRORS
from ..sinks.base import ScoreSink
from ..sinks.call import ScoredCall
from ..sinks.delivery import SinkRetry, Storage
from ..sinks.record import ScoreRecord
from .entry import Decision, LiveScorerEntry
from .work_queue import Job, JobOutcome, WorkQueue

__all__ = [
    "OFFLOAD_CHARS",
    "Counts",
    "Run",
    "RunIdIssuer",
    "ScoringEngine",
    "call_is_heavy",
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
    call: ScoredCall
    done: asyncio.Future[ScoreRecord] | None = None
    tag: Any = None


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

    def decided(self, scorer_id: str, decision: LiveDecision) -> None:
        self.add(decision)
        self.observers.decision(scorer_id, decision)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


# -- one run: its id, and scoring it ------------------------------------------------------------


def live_run_id(
    scorer_id: str,
    trace_id: str | None,
    run_id: str | None,
    span_id: str | None,
    entity_id: str | None,
) -> str:
    """`scoring-<scorerId>-<traceId|runId>-<spanId|entityId>`; a random uuid if both are missing."""
    first = trace_id or run_id
    second = span_id or entity_id
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
    # A small call leaves the step executor as the context has it (none, unless the caller
    # installed one), instead of paying a context manager per call to set it to None.
    heavy = call_is_heavy(call)
    try:
        with offload_function_steps(shared_step_pool()) if heavy else nullcontext():
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
    if quote:
        message, args = "live scorer %r failed on run %s: %s", (result.error,)
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

    `on_stored(seconds)` hears how long each stored run held its slot; `on_finished(run,
    outcome)` hears every accepted run end, once.
    `quote_errors` puts error texts and tracebacks in the logs (a library user's own process);
    a service logs error types only, as the texts may quote its clients' content. `observers`
    is the event bus the engine, its runs and sink writes report to (default: that of `counts`,
    else the bus current at construction).
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
        on_stored: Callable[[float], None] | None = None,
        on_finished: Callable[[Run, JobOutcome], None] | None = None,
        observers: Observers | None = None,
    ) -> None:
        self.entries: dict[str, LiveScorerEntry] = dict(entries)
        self.counts = counts if counts is not None else Counts(observers=observers)
        # The bus telemetry hears this engine on; its runs and sink writes report there too.
        self.observers = self.counts.observers
        self._warn = ThrottledLog(logger)
        self.storage = Storage(sinks, retry=sink_retry, quote_errors=quote_errors, warn=self._warn)
        self._quote = quote_errors
        self._on_stored = on_stored
        self._on_finished = on_finished
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
            on_in_flight=self.observers.in_flight,
            on_finished=self._finished,
        )
        self._unregister_depth = self.observers.register_queue_depth(lambda: self.queue.queued)
        # For the unkeyed fast path of `offer`: without filters, and when every scorer samples
        # at a rate, a call whose draw is at or above the highest rate is taken by none of them.
        rates = [entry.sampling.rate for entry in self.entries.values()]
        self._unfiltered = all(entry.filter is None for entry in self.entries.values())
        self._highest_rate: float | None = (
            max(rates) if rates and all(rate is not None for rate in rates) else None  # type: ignore[type-var]
        )
        self._none_sampled: dict[str, LiveDecision] = dict.fromkeys(self.entries, "not_sampled")

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

    def offer(
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
        """Offer one call to every scorer; the decision per entry name. Never waits. The
        all-not-sampled answer is shared between calls: copy it before handing it out."""
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
        for key, entry in self.entries.items():
            if draw is not None:
                rate = entry.sampling.rate
                decided: Decision = "sampled" if rate is None or draw < rate else "not_sampled"
            else:
                decided = entry.decide(call, sample_key, self._warn)
            scorer = entry.scorer
            decision: LiveDecision = decided
            if decided == "sampled":
                base = live_run_id(scorer.id, call.trace_id, call.run_id, call.span_id, target)
                decision = self.enqueue(Run(scorer, self._ids.issue(base), call))
            self.counts.decided(scorer.id, decision)
            decisions[key] = decision
        return decisions

    def _not_sampled_by_all(self) -> dict[str, LiveDecision]:
        self.counts.add("not_sampled", len(self.entries))
        if self.observers.subscribers:
            for entry in self.entries.values():
                self.observers.decision(entry.scorer.id, "not_sampled")
        return self._none_sampled

    def enqueue(self, run: Run, loop: asyncio.AbstractEventLoop | None = None) -> LiveDecision:
        """Queue an accepted run, to run on `loop` (see the module's doc), and return the
        decision: `sampled`, or `dropped_queue_full` / `dropped_shutdown` when the queue refused
        it. Not counted: the caller counts the decision. Any thread may call it."""
        return _ADMISSION[self.queue.offer(run, loop=loop)]

    # -- running ---------------------------------------------------------------------------------

    async def _execute(self, job: Job[Run]) -> JobOutcome:
        run = job.payload
        started = time.perf_counter()  # a run waiting for its turn holds its slot too
        warm_up = self._warm_up
        if warm_up is not None and run.scorer.has_judge:
            if not warm_up.done():  # the loop waits for it, never imports litellm itself
                await asyncio.wrap_future(warm_up)
            self._warm_up = None
        with observed_by(self.observers):  # a job's task starts from an empty context
            result = await score_call(run.scorer, run.call, run.run_id)
        if result.status == "failed":
            self._run_failed(run, result)
        if not self.queue.begin_commit(job):
            return result.outcome  # given up at shutdown meanwhile: counted as dropped, not stored
        with observed_by(self.observers):
            delivery = await self.storage.store(result)
        if run.done is not None:
            _settle(run.done, None if delivery.dropped else delivery.stored)
        if self._on_stored is not None:
            # The slot is held until the result is stored: that is what a run costs.
            self._on_stored(time.perf_counter() - started)
        return delivery.stored.outcome

    def _run_failed(self, run: Run, result: ScoreRecord) -> None:
        log_failed_run(self._warn, result, quote=self._quote)

    def _finished(self, job: Job[Run], outcome: JobOutcome) -> None:
        run = job.payload
        self.counts.add(outcome)
        if outcome == "dropped_shutdown":
            self.observers.decision(run.scorer.id, "dropped_shutdown")
            if run.done is not None:
                _settle(run.done, None)
        if self._on_finished is not None:
            self._on_finished(run, outcome)

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

    async def aclose(self) -> None:
        """Close the sinks and stop reporting the queue depth (after `shutdown`)."""
        self._unregister_depth()
        await self.storage.aclose()

    def close_blocking(self, timeout: float | None) -> None:
        """`aclose` for code without a running loop."""
        self._unregister_depth()
        self.storage.close_blocking(timeout)


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
