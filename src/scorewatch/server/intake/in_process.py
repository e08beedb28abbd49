"""`InProcessIntake`: serve's per-request admission on top of the live scoring engine.

The engine (`live.engine`) does what `LiveScoring` does: deterministic sampling and run ids, the
bounded `WorkQueue`, scoring, the sinks (retried while one is down, up to
`sinks.retry_timeout`), counts, drain and close. What the service adds is per-request scorer
selection, all-or-nothing admission of a request (bounded by queue length, measured queue delay
and held request bytes), and result futures for `?wait=true`.

Given a `ScoringLoop`, the runs (scorer steps, judge calls, sink writes) run on it, off the loop
that admits: admission stays on the caller's loop (no await between the capacity check and the
offers), the runs are enqueued naming the scoring loop, and the `?wait=true` futures, which
belong to the admitting loop, are settled through it (the engine hands them over with
`call_soon_threadsafe`). The sinks are written and closed there too. Without one, the runs
share the caller's loop.

Accounting, at any time:

    sampled == scored + not_scorable + failed + dropped_shutdown + queued + in_flight

A refused request (queue full, or shutting down) counts its sampled evaluations as
`dropped_queue_full` / `dropped_shutdown` decisions and nothing else, so a retried request is not
counted twice as `not_sampled`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...live.budgets import Budgets
from ...live.engine import Run, ScoringEngine
from ...live.entry import LiveScorerEntry
from ...live.events import LiveDecision
from ...live.work_queue import JobOutcome
from ...privacy import PrivacyPolicy
from ...sinks.base import ScoreSink
from ...sinks.delivery import SinkRetry
from ...sinks.record import ScoreRecord
from .admission import (
    IntakeCounts,
    plan_digest,
    plan_items,
    plan_items_off_loop,
    plans_off_loop,
    request_run_id,
)
from .interface import Accepted, Admission, IntakeClosedError, QueueFullError, ScoreItem
from .loop_lag import LoopLag
from .scoring_loop import ScoringLoop
from .throughput import Pace, Throughput

__all__ = ["InProcessIntake"]

logger = logging.getLogger("scorewatch.server")

# Past this average lateness of the admitting loop, requests are refused unread: its answers
# are already slower than the 100 ms a client may expect of a 202 or a 429 (BENCHMARKS.md).
_MAX_ADMIT_LAG_S = 0.1
# How often the admitting loop's lateness is sampled. Each sample is a timer waking the loop,
# tens of µs of CPU on a virtual machine: at 100 a second that was as much as the work of the
# requests themselves at a moderate rate. A lag of 100 ms shows as well in 20 samples a second.
_ADMIT_LAG_INTERVAL_S = 0.05
# How long runs admitted here may wait before the scoring loop is woken for them (all that
# arrived meanwhile in one wake-up). Per request at 500 scored requests a second, a wake-up each
# cost the two threads more CPU than the hand-off's work; 5 ms takes ~2.5 per wake-up there
# and adds at most that to a run's time to its score (BENCHMARKS.md). `?wait=true` does not wait.
_HAND_OFF_LINGER_S = 0.005


@dataclass(slots=True)
class _Held:
    """The memory one accepted item holds until the last of its runs ends."""

    size: int
    runs: int


@dataclass(frozen=True, slots=True)
class _Wait:
    rate: float  # runs finished per second
    allowed: int  # runs that may wait


class InProcessIntake:
    """Runs at most `max_concurrency` scorer runs at once; at most `max_queue` wait, and no
    more than it finishes in `max_queue_delay` seconds at its measured rate (so accepted work
    waits a bounded time); the accepted items not yet finished hold at most `max_queue_bytes`
    of request body (an item larger than that is still accepted when nothing else is held, so
    it is never refused forever). Requests are refused unread while the queue is past its
    delay, or while the loop that admits runs more than `_MAX_ADMIT_LAG_S` behind, beyond what
    the service finishes meanwhile (`Pace`)."""

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
        privacy: PrivacyPolicy | None = None,
        budgets: Budgets | None = None,
    ) -> None:
        self._max_queue = max_queue
        self._max_bytes = max_queue_bytes
        self._max_delay = max_queue_delay
        self._max_concurrency = max_concurrency
        self._throughput = Throughput(max_concurrency)
        self._pace = Pace(self._throughput)
        self._held_bytes = 0
        self._lock = threading.Lock()  # the held bytes
        self._budgets = budgets if budgets else None
        self._counts = IntakeCounts("shed_requests", budgets=self._budgets)
        self._engine = ScoringEngine(
            entries,
            sinks=sinks,
            max_concurrency=max_concurrency,
            max_queue=max_queue,
            # A sink that is down keeps its runs' slots (and the bounded queue behind them fills
            # up, answering 429) until it is back, the retry budget is spent or shutdown has no
            # time left.
            sink_retry=SinkRetry(first_pause=0.25, budget=sink_retry_timeout),
            quote_errors=False,
            counts=self._counts,
            on_stored=self._throughput.finished,
            privacy=privacy,
            on_finished=self._finished,
            budgets=self._budgets,
        )
        self._queue = self._engine.queue
        if scoring is not None:
            self._queue.hand_off_linger = _HAND_OFF_LINGER_S
        self._closed = False
        # Owned: its runs and sinks are closed on it, then it is closed (`aclose`).
        self._scoring = scoring
        self._admit_lag = LoopLag(interval=_ADMIT_LAG_INTERVAL_S)
        self._wait: _Wait | None = None  # the last `_admissible_wait`

    # -- introspection ---------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._max_queue

    def stats(self) -> dict[str, int]:
        snapshot = self._engine.stats()
        snapshot.update(self._engine.storage.stats())
        with self._lock:
            snapshot["queued_bytes"] = self._held_bytes
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
        if lag > _MAX_ADMIT_LAG_S and not self._pace.allows():
            # The loop that reads requests is behind (scoring may keep up meanwhile): requests
            # already wait in its sockets, where no queue counts them. What the service finishes
            # is still admitted (`Pace`); the rest is refused unread.
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
        entries = self._engine.entries
        budgets = self._budgets
        if plans_off_loop(budgets):
            plans = await plan_items_off_loop(entries, items, budgets)
        else:  # CPU work of microseconds: no coroutine of its own
            plans = plan_items(entries, items, budgets)
        # No await from here to the end: on the event loop, the capacity check and the offers
        # that follow it cannot interleave with another request's.
        needed = needed_bytes = 0
        for plan in plans:
            if plan.sampled:
                needed += len(plan.sampled)
                needed_bytes += plan.item.size

        queue = self._queue
        if self._closed or queue.closed:
            self._counts.refused(plans, "dropped_shutdown")
            raise IntakeClosedError("the service is shutting down")
        # One reading of the queue's length for every check (the scoring thread shortens it
        # meanwhile): the checks and a refusal's message agree with each other.
        queued = queue.queued
        free = self._max_queue - queued
        if needed > free:
            self._counts.refused(plans, "dropped_queue_full")
            raise QueueFullError(needed, max(free, 0), self._max_queue)
        waiting = self._admissible_wait()
        if waiting is not None and queued + needed > waiting.allowed:
            self._counts.refused(plans, "dropped_queue_full")
            excess = queued + needed - waiting.allowed
            raise QueueFullError(
                needed,
                max(waiting.allowed - queued, 0),
                self._max_queue,
                detail=f"the scoring queue holds {queued} runs, about "
                f"{queued / waiting.rate:.1f}s of work at the {waiting.rate:.0f} "
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

        self._pace.spend(needed)
        loop = asyncio.get_running_loop() if want_results else None
        runs_on = self._scoring.loop if self._scoring is not None else None
        if needed:  # what every accepted item holds, added once for the request
            with self._lock:
                self._held_bytes += needed_bytes
        enqueue = self._engine.enqueue
        admissions: list[Admission] = []
        self._counts.skipped(plans)
        for plan in plans:
            admission = Admission(skipped=plan.skipped, results={} if want_results else None)
            admissions.append(admission)
            sampled = plan.sampled
            if not sampled:
                continue
            item, call, holds = plan.item, plan.call, plan.holds
            hold = _Held(item.size, len(sampled))
            digest = plan_digest(plan)
            for scorer_id in sampled:
                run_id = request_run_id(scorer_id, item, digest)
                done: asyncio.Future[ScoreRecord] | None = None
                if loop is not None and admission.results is not None:
                    done = loop.create_future()
                    admission.results[run_id] = done
                budget_hold = holds.get(scorer_id) if holds else None
                answer: LiveDecision = enqueue(
                    Run(entries[scorer_id].scorer, run_id, call, done, hold, budget_hold), runs_on
                )
                if answer != "sampled":  # cannot happen after the check above; never hide it
                    self._release(hold)
                    if self._budgets is not None:
                        self._budgets.release(budget_hold)
                    logger.error("queue refused an admitted run (%s); counted as such", answer)
                    self._counts.decided(scorer_id, answer)
                    continue
                self._counts.decided(scorer_id, "sampled")
                admission.accepted.append(Accepted(scorer_id, run_id))
        if want_results and runs_on is not None:  # the caller waits: no lingering hand-off
            self._queue.hand_off_now(runs_on)
        return admissions

    # -- running ---------------------------------------------------------------------------------

    def _finished(self, finished: list[tuple[Run, JobOutcome]]) -> None:
        """Runs ended (together: one lock for all)."""
        with self._lock:
            for run, _outcome in finished:
                if run.tag is not None:
                    self._release_locked(run.tag)

    def _release(self, hold: _Held) -> None:
        with self._lock:
            self._release_locked(hold)

    def _release_locked(self, hold: _Held) -> None:
        """One run of an item ended: its bytes are held no more once the last one has."""
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
        # Kept while the rate stays the same: a request reads it twice (`refuse_early`, then
        # `admit`) and the rate changes at most once per finished run.
        wait = self._wait
        if wait is None or wait.rate != rate:
            wait = _Wait(rate, max(self._max_concurrency, int(rate * self._max_delay)))
            self._wait = wait
        return wait

    # -- shutdown --------------------------------------------------------------------------------

    async def shutdown(self, timeout: float) -> int:  # noqa: ASYNC109 - a drain budget
        self._closed = True
        self._admit_lag.close()
        return await self._engine.shutdown(timeout)

    async def aclose(self) -> None:
        if self._scoring is None or not self._scoring.alive:  # or closed already
            await self._engine.aclose()
            return
        # The sinks were opened on the scoring loop (a psycopg pool is tied to its loop).
        try:
            await self._scoring.run(self._engine.aclose())
        finally:
            await asyncio.to_thread(self._scoring.close)
