"""`InProcessIntake`: scores accepted traffic in this process with live scoring's machinery.

The same pieces as `LiveScoring` (spec §8): filter, then deterministic sampling on the trace id
(else the run id), deterministic run ids, the bounded `WorkQueue`, the result sinks, and the live
event bus that telemetry listens to. What the service adds is per-request scorer selection,
all-or-nothing admission of a request, and result futures for `?wait=true`.

Given a `ScoringLoop`, the runs (scorer steps, judge calls, sink writes) run on it, off the loop
that admits: admission stays on the caller's loop (no await between the capacity check and the
offers), the jobs are placed on the scoring loop, and the `?wait=true` futures, which belong to
the admitting loop, are settled through it (`call_soon_threadsafe`). The sinks are written and
closed there too. Without one, the runs share the caller's loop.

Accounting, at any time:

    sampled == scored + failed + dropped_shutdown + queued + in_flight

A refused request (queue full, or shutting down) counts its sampled evaluations as
`dropped_queue_full` / `dropped_shutdown` decisions and nothing else, so a retried request is not
counted twice as `not_sampled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.events import LiveDecision, current_observers
from ..core.scorer import Scorer
from ..live.entry import LiveScorerEntry
from ..live.run_ids import request_run_id
from ..live.score_call import score_call
from ..live.work_queue import Job, JobOutcome, WorkQueue
from ..sinks.base import ScoreSink
from ..sinks.call import ScoredCall
from ..sinks.delivery import Delivery, deliver
from ..sinks.record import ScoreRecord
from .admission import IntakeCounts, close_sinks, plan_digest, plan_items
from .intake import (
    Accepted,
    Admission,
    IntakeClosedError,
    QueueFullError,
    ScoreItem,
)
from .loop_lag import LoopLag
from .scoring_loop import ScoringLoop
from .throughput import Throughput

__all__ = ["InProcessIntake"]

logger = logging.getLogger("scorewatch.server")

# How long shutdown waits, after the drain budget, for runs that are storing their results.
_COMMIT_GRACE_S = 10.0

# Past this average lateness of the admitting loop, requests are refused unread: its answers
# are already slower than the 100 ms a client may expect of a 202 or a 429 (BENCHMARKS.md).
_MAX_ADMIT_LAG_S = 0.1


@dataclass(slots=True)
class _Held:
    """The memory one accepted item holds until the last of its runs ends."""

    size: int
    runs: int


@dataclass(frozen=True, slots=True)
class _Wait:
    rate: float  # runs finished per second
    allowed: int  # runs that may wait


@dataclass(frozen=True, slots=True)
class _Work:
    scorer_id: str
    scorer: Scorer
    run_id: str
    call: ScoredCall
    done: asyncio.Future[ScoreRecord] | None
    held: _Held | None = None


class InProcessIntake:
    """Runs at most `max_concurrency` scorer runs at once; at most `max_queue` wait, and no
    more than it finishes in `max_queue_delay` seconds at its measured rate (so accepted work
    waits a bounded time); the accepted items not yet finished hold at most `max_queue_bytes`
    of request body (an item larger than that is still accepted when nothing else is held, so
    it is never refused forever). Requests are refused unread while the queue is past its
    delay, or while the loop that admits runs more than `_MAX_ADMIT_LAG_S` behind."""

    def __init__(
        self,
        entries: Mapping[str, LiveScorerEntry],
        *,
        sinks: Sequence[ScoreSink],
        max_concurrency: int,
        max_queue: int,
        max_queue_bytes: int | None = None,
        sink_retry_timeout: float = 120.0,
        max_queue_delay: float | None = None,
        scoring: ScoringLoop | None = None,
    ) -> None:
        self._entries = dict(entries)
        self._sinks = tuple(sinks)
        self._sink_retry_timeout = sink_retry_timeout
        self._giving_up = False  # shutdown's drain budget is spent: stop waiting for sinks
        self._max_queue = max_queue
        self._max_bytes = max_queue_bytes
        self._max_delay = max_queue_delay
        self._max_concurrency = max_concurrency
        self._throughput = Throughput(max_concurrency)
        self._held_bytes = 0
        self._lock = threading.Lock()  # the held bytes and the sink errors
        self._counts = IntakeCounts("shed_requests")
        self._sink_errors: dict[str, int] = {}
        self._sink_refused = 0
        self._sink_dropped = 0
        self._queue: WorkQueue[_Work] = WorkQueue(
            self._execute,
            max_queue=max_queue,
            max_concurrency=max_concurrency,
            on_in_flight=current_observers().in_flight,
            on_finished=self._finished,
        )
        self._unregister_depth = current_observers().register_queue_depth(
            lambda: self._queue.queued
        )
        self._closed = False
        # Owned: its runs and sinks are closed on it, then it is closed (`aclose`).
        self._scoring = scoring
        self._admit_lag = LoopLag()

    # -- introspection ---------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._max_queue

    def stats(self) -> dict[str, int]:
        snapshot = self._counts.snapshot()
        with self._lock:
            snapshot["sink_errors"] = sum(self._sink_errors.values())
            snapshot["sink_refused"] = self._sink_refused
            snapshot["sink_dropped"] = self._sink_dropped
            snapshot["queued_bytes"] = self._held_bytes
        snapshot["queued"] = self._queue.queued
        snapshot["in_flight"] = self._queue.in_flight
        return snapshot

    def saturated(self) -> bool:
        if self._max_bytes is not None and self._held_bytes >= self._max_bytes:
            return True
        return self._queue.queued >= self._max_queue

    def refuse_early(self) -> int | None:
        # Refusing a request unread costs a fraction of parsing it: past the limit, that is
        # what keeps the answers fast when more arrives than the service can finish.
        self._admit_lag.watch()
        lag = self._admit_lag.seconds()
        if lag > _MAX_ADMIT_LAG_S:
            # The loop that reads requests is behind (scoring may keep up meanwhile): requests
            # already wait in its sockets, where no queue counts them.
            self._counts.add("rejected_requests")
            self._counts.add("shed_requests")
            return Throughput.seconds_for(lag, 1.0)
        queued = self._queue.queued
        waiting = self._admissible_wait()
        # Only the measured queue delay sheds unread: a refusal at the configured `max_queue`
        # is made after parsing, so each refused evaluation is counted as `dropped_queue_full`.
        if waiting is None or queued < waiting.allowed:
            return None
        retry = Throughput.seconds_for(queued - waiting.allowed + 1, waiting.rate)
        self._counts.add("rejected_requests")
        self._counts.add("shed_requests")
        return retry

    # -- admission -------------------------------------------------------------------------------

    async def admit(
        self, items: Sequence[ScoreItem], *, want_results: bool = False
    ) -> list[Admission]:
        # No await from here to the end: on the event loop, the capacity check and the offers
        # that follow it cannot interleave with another request's.
        plans = plan_items(self._entries, items)
        needed = sum(len(plan.sampled) for plan in plans)
        needed_bytes = sum(plan.item.size for plan in plans if plan.sampled)

        if self._closed or self._queue.closed:
            self._counts.refused(plans, "dropped_shutdown")
            raise IntakeClosedError("the service is shutting down")
        free = self._max_queue - self._queue.queued
        if needed > free:
            self._counts.refused(plans, "dropped_queue_full")
            raise QueueFullError(needed, max(free, 0), self._max_queue)
        waiting = self._admissible_wait()
        if waiting is not None and self._queue.queued + needed > waiting.allowed:
            self._counts.refused(plans, "dropped_queue_full")
            excess = self._queue.queued + needed - waiting.allowed
            raise QueueFullError(
                needed,
                max(waiting.allowed - self._queue.queued, 0),
                self._max_queue,
                detail=f"the scoring queue holds {self._queue.queued} runs, about "
                f"{self._queue.queued / waiting.rate:.1f}s of work at the {waiting.rate:.0f} "
                f"runs/s the service finishes (live.max_queue_delay = {self._max_delay:g}s)",
                retry_after=Throughput.seconds_for(excess, waiting.rate),
            )
        held = self._held_bytes
        if self._max_bytes is not None and held and held + needed_bytes > self._max_bytes:
            self._counts.refused(plans, "dropped_queue_full")
            raise QueueFullError(
                needed,
                max(free, 0),
                self._max_queue,
                detail=f"the scoring queue holds {held} bytes of accepted items; "
                f"{needed_bytes} more would pass live.max_queue_bytes ({self._max_bytes})",
            )

        loop = asyncio.get_running_loop()
        runs_on = self._scoring.loop if self._scoring is not None else None
        admissions: list[Admission] = []
        self._counts.skipped(plans)
        for plan in plans:
            item, call = plan.item, plan.call
            admission = Admission(skipped=plan.skipped, results={} if want_results else None)
            hold = _Held(item.size, len(plan.sampled)) if plan.sampled else None
            if hold is not None:
                with self._lock:
                    self._held_bytes += hold.size
            digest = plan_digest(plan) if plan.sampled else ""
            for scorer_id in plan.sampled:
                scorer = self._entries[scorer_id].scorer
                run_id = request_run_id(
                    scorer_id, item.trace_id, item.run_id, item.span_id, item.target, digest
                )
                done: asyncio.Future[ScoreRecord] | None = None
                if admission.results is not None:
                    done = loop.create_future()
                    admission.results[run_id] = done
                answer = self._queue.offer(
                    _Work(scorer_id, scorer, run_id, call, done, hold), loop=runs_on
                )
                if answer != "accepted":  # cannot happen after the check above; never hide it
                    self._release(hold)
                    logger.error("queue refused an admitted run (%s); counted as dropped", answer)
                    dropped: LiveDecision = (
                        "dropped_queue_full" if answer == "queue_full" else "dropped_shutdown"
                    )
                    self._counts.decided(scorer_id, dropped)
                    continue
                self._counts.decided(scorer_id, "sampled")
                admission.accepted.append(Accepted(scorer_id, run_id))
            admissions.append(admission)
        return admissions

    # -- running ---------------------------------------------------------------------------------

    async def _execute(self, job: Job[_Work]) -> JobOutcome:
        work = job.payload
        started = time.perf_counter()
        live_result = await score_call(work.scorer, work.call, work.run_id)
        if live_result.outcome == "failed":
            # The error text may quote content; the log names only the run and the error type.
            logger.debug(
                "scorer %r failed on run %s (%s)",
                work.scorer_id,
                work.run_id,
                live_result.error_type,
            )
        if not self._queue.begin_commit(job):
            return "failed"  # given up at shutdown meanwhile: counted as dropped, never stored
        delivery = await self._store(live_result)
        stored = delivery.stored
        if work.done is not None:
            # Not stored: `?wait=true` says dropped (a cancelled future).
            _settle(work.done, None if delivery.dropped else stored)
        # The slot is held until the result is stored: that is what a run costs.
        self._throughput.finished(time.perf_counter() - started)
        return stored.outcome

    async def _store(self, result: ScoreRecord) -> Delivery:
        def failed(name: str, error: Exception) -> None:
            with self._lock:
                self._sink_errors[name] = self._sink_errors.get(name, 0) + 1
            logger.error(
                "sink %r failed to store run %s (%s)", name, result.id, type(error).__name__
            )

        deadline = time.monotonic() + self._sink_retry_timeout

        async def retry(name: str, attempts: int, error: Exception) -> bool:
            # The sink is down: the job keeps its slot (and the bounded queue behind it fills
            # up, answering 429) until the sink is back, the retry budget is spent or shutdown
            # has no time left.
            pause = min(0.25 * 2 ** min(attempts - 1, 5), 5.0)
            if self._giving_up or time.monotonic() + pause > deadline:
                return False
            await asyncio.sleep(pause)
            return not self._giving_up

        delivery = await deliver(self._sinks, result, failed, retry)
        with self._lock:
            self._sink_refused += len(delivery.refused)
            self._sink_dropped += len(delivery.dropped) + len(delivery.unstorable)
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

    def _release(self, hold: _Held | None) -> None:
        if hold is None:
            return
        with self._lock:
            hold.runs -= 1
            if hold.runs == 0:
                self._held_bytes -= hold.size

    def _admissible_wait(self) -> _Wait | None:
        """How many runs may wait: what the service finishes in live.max_queue_delay at its
        measured rate (never fewer than max_concurrency, so a slow start is not starved);
        None while the rate is not yet known."""
        if self._max_delay is None:
            return None
        rate = self._throughput.rate()
        if rate is None:
            return None
        return _Wait(rate, max(self._max_concurrency, int(rate * self._max_delay)))

    def _finished(self, job: Job[_Work], outcome: JobOutcome) -> None:
        self._release(job.payload.held)
        self._counts.add(outcome)
        if outcome == "dropped_shutdown":
            current_observers().decision(job.payload.scorer_id, "dropped_shutdown")
            done = job.payload.done
            if done is not None:
                _settle(done, None)

    # -- shutdown --------------------------------------------------------------------------------

    async def shutdown(self, timeout: float) -> int:  # noqa: ASYNC109 - a drain budget
        self._closed = True
        self._admit_lag.close()
        self._queue.close()
        if await self._queue.drain(timeout):
            return 0
        self._giving_up = True
        given_up = self._queue.abandon_all()
        # Runs already storing their results finish: one counted as dropped is never stored,
        # one stored is never counted as dropped.
        await self._queue.drain(_COMMIT_GRACE_S)
        if given_up:
            logger.warning(
                "%d accepted run(s) not finished within %.1fs of shutdown; counted as "
                "dropped_shutdown",
                given_up,
                timeout,
            )
        return given_up

    async def aclose(self) -> None:
        self._unregister_depth()
        if self._scoring is None or not self._scoring.alive:  # or closed already
            await close_sinks(self._sinks)
            return
        # The sinks were opened on the scoring loop (a psycopg pool is tied to its loop).
        try:
            await self._scoring.run(close_sinks(self._sinks))
        finally:
            await asyncio.to_thread(self._scoring.close)


def _settle(future: asyncio.Future[ScoreRecord], result: ScoreRecord | None) -> None:
    """Resolve a `?wait=true` future (None cancels it) from any thread, on its own loop."""
    with contextlib.suppress(RuntimeError):  # its loop closed: nobody waits any more
        future.get_loop().call_soon_threadsafe(_resolve, future, result)


def _resolve(future: asyncio.Future[ScoreRecord], result: ScoreRecord | None) -> None:
    if future.done():
        return
    if result is None:
        future.cancel()
    else:
        future.set_result(result)
