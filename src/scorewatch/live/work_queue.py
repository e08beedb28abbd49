"""The bounded live-scoring queue: admission, concurrency, loop placement and shutdown.

A job runs on the event loop the submitter names, else on the one of the code that submitted
it when there is one, else on scorewatch's single background loop (core/sync.py). `max_queue`
bounds the jobs waiting and `max_concurrency` the jobs running, across all loops together.
Admission never blocks and never waits: a job beyond the bound is refused, and the caller
counts that refusal.

Loops die under live work (an `asyncio.run` returns, a test ends). Jobs waiting on a dead loop,
and running jobs cancelled or destroyed by its shutdown, move to the background loop and run
again under the same deterministic run id, so accepted work is never lost silently: it is
finished, or counted as dropped at shutdown.

A job is run by a task of its own, or, when the owner's `eager(payload)` says so (a model-free
scorer run), started at once inside the pump, as Python 3.12's eager tasks start: a job that
never suspends costs no task, and one that does continues as a task from where it stopped. A
job may also end after its coroutine: `execute` returns None when it has arranged for `settle`
to be called later, from any thread (a sink's writer acknowledging the stored result), or
`settle_all` for jobs ending together (a transaction's runs: one lock and one report for all).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from ..core.sync import background_loop

__all__ = ["Job", "JobOutcome", "QueueAdmission", "WorkQueue", "in_live_job", "resumed"]

logger = logging.getLogger("scorewatch.live")

QueueAdmission = Literal["accepted", "queue_full", "closed"]
JobOutcome = Literal["scored", "not_scorable", "failed", "dropped_shutdown"]
JobState = Literal["queued", "running", "done"]

P = TypeVar("P")
T = TypeVar("T")

_IN_LIVE_JOB: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "scorewatch_in_live_job", default=False
)


def in_live_job() -> bool:
    """True inside a live scoring job (so judge traffic is never taken for agent traffic)."""
    return _IN_LIVE_JOB.get()


def _current_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Lane:
    __slots__ = ("handed", "jobs", "linger_until", "loop", "poll_at", "poll_due", "wake_pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.jobs: deque[Job[Any]] = deque()
        self.wake_pending = False
        # While a lingering hand-off's timer is due (monotonic seconds; 0: none), offers from
        # another loop leave the wake-up to it.
        self.linger_until = 0.0
        # Jobs offered from another loop since the lane's loop last took them (`_poll`).
        self.handed = 0
        # While the lane's loop polls for such offers itself (monotonic seconds its next poll
        # is due; 0: it does not), offers from another loop neither wake it nor start a timer.
        self.poll_due = 0.0
        # The loop's time of the last poll scheduled: the next is due `hand_off_linger` after
        # it, not after the poll ran late (see `_pump`).
        self.poll_at = 0.0


@dataclass(eq=False, slots=True)
class Job(Generic[P]):
    payload: P
    state: JobState = "queued"
    lane: _Lane | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    deliveries: int = 0
    # Set by `begin_commit`: the job is storing its result and shutdown no longer gives it up.
    committing: bool = False


class WorkQueue(Generic[P]):
    """Runs `execute(job)` for admitted jobs. `execute` must not raise: it returns the outcome,
    or None when `settle` will be called with it later. `eager(payload)`: start the job's
    coroutine at once instead of in a task of its own (see the module's doc). `context`: what
    every job's context starts from (each job runs in a copy of its own, where `in_live_job()`
    is true): the owner's context variables, set once rather than by every job.
    `on_in_flight(delta)` hears every job start (+1) and end (-1); an owner that reads
    `in_flight` when it needs it passes none, and its jobs make no call for it.
    `on_finished(finished)` hears every job end once, as `(job, outcome)` in a list of the jobs
    that ended together (`settle_all`; one, mostly, elsewhere)."""

    def __init__(
        self,
        execute: Callable[[Job[P]], Coroutine[Any, Any, JobOutcome | None]],
        *,
        max_queue: int,
        max_concurrency: int,
        on_in_flight: Callable[[int], None] | None = None,
        on_finished: Callable[[list[tuple[Job[P], JobOutcome]]], None] = lambda finished: None,
        eager: Callable[[P], bool] | None = None,
        context: contextvars.Context | None = None,
    ) -> None:
        if max_queue < 0:
            raise ValueError("max_queue must be >= 0")
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self._execute = execute
        self._eager = eager
        # Copied for each job (a copy shares the template's variables until the job sets its
        # own): one `Context.copy` a job instead of a fresh context and a variable set in it.
        self._job_context = contextvars.Context() if context is None else context.copy()
        self._job_context.run(_IN_LIVE_JOB.set, True)
        self._max_queue = max_queue
        self._max_concurrency = max_concurrency
        self._on_in_flight = on_in_flight
        self._on_finished = on_finished
        self._lock = threading.Lock()
        self._lanes: dict[asyncio.AbstractEventLoop, _Lane] = {}
        self._queued = 0
        self._running: set[Job[P]] = set()
        self._closed = False
        self._idle_waiters: list[Callable[[], None]] = []
        # Seconds an offer made on another running loop may wait before its lane's loop is
        # woken (0: at once); see `hand_off_linger`.
        self._linger = 0.0

    @property
    def hand_off_linger(self) -> float:
        """How long jobs offered from another thread's running loop may wait to be handed
        over, so that one cross-thread wake-up takes all that arrived meanwhile (0: each offer
        wakes the lane's loop at once). A wake-up is a self-pipe write, the target thread's
        loop iteration and a GIL hand-over between the two threads: per request, at a
        moderate rate, that cost more CPU than the hand-off's own work (BENCHMARKS.md).
        `hand_off_now` ends the wait for a caller waiting for its runs; a slot freed on the
        lane's loop, and every rescue, pumps lingering jobs at once. Once woken, the lane's loop
        polls for such offers itself every `hand_off_linger` while each poll finds some
        (`_poll`; started when a wake-up took more than one): under a steady stream, the
        offering loop neither wakes for a timer nor writes to the lane's loop, and the lane's
        loop wakes on a timer of its own, with no read of its self-pipe; the first poll to find
        nothing ends it."""
        return self._linger

    @hand_off_linger.setter
    def hand_off_linger(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("hand_off_linger must be >= 0")
        self._linger = seconds

    # -- state -----------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def in_flight(self) -> int:
        return len(self._running)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def waiting_for_slots(self) -> bool:
        """Jobs are queued and every slot is taken: they wait for a running job to end (not
        merely for their loop to take them)."""
        return self._queued > 0 and len(self._running) >= self._max_concurrency

    def _idle_locked(self) -> bool:
        return self._queued == 0 and not self._running

    # -- admission -------------------------------------------------------------------------------

    def offer(self, payload: P, *, loop: asyncio.AbstractEventLoop | None = None) -> QueueAdmission:
        """Queue a job on `loop`, by default the caller's (else the background loop). Never
        blocks for work."""
        try:
            caller: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            caller = None
        loop = loop or caller
        if self._closed:
            return "closed"
        if loop is None:
            loop = background_loop()
        linger = self._linger if caller is not None and caller is not loop else 0.0
        with self._lock:
            if self._closed:
                return "closed"
            if self._queued >= self._max_queue:
                return "queue_full"
            # Every offer re-homes the jobs of lanes whose loop closed; the look costs a check
            # per lane, and the forgetting only happens once one has.
            known = self._lanes
            for other in known:
                if other.is_closed():
                    self._forget_dead_lanes_locked()
                    break
            lane = known.get(loop) or self._lane_locked(loop)
            job: Job[P] = Job(payload, lane=lane)
            lane.jobs.append(job)
            self._queued += 1
            timer = False
            lanes: list[_Lane] | tuple[()] = ()
            if linger:
                lane.handed += 1
                now = time.monotonic()
                # The lane's loop polls (`_poll`), else a timer is due; either long overdue was
                # lost with its loop (closed under it): start a timer.
                if (
                    not lane.wake_pending
                    and not now < lane.poll_due + linger
                    and not now < lane.linger_until + linger
                ):
                    lane.linger_until = now + linger
                    timer = True
                if len(known) > 1:  # (serve has one lane: the scoring loop's)
                    lanes = self._lanes_to_wake_locked(but=lane)
            else:
                lanes = self._lanes_to_wake_locked()
        if timer:
            assert caller is not None  # `linger` is 0 without one
            caller.call_later(linger, self._linger_over, lane)
        for ready in lanes:
            self._wake(ready)
        return "accepted"

    def hand_off_now(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wake `loop`'s lane now if its jobs linger (a caller waits for their results)."""
        with self._lock:
            lane = self._lanes.get(loop)
            if lane is None:
                return
            lane.linger_until = 0.0
            wake = self._claim_wake_locked(lane)
        if wake:
            self._wake(lane)

    def _linger_over(self, lane: _Lane) -> None:
        with self._lock:
            lane.linger_until = 0.0
            wake = self._claim_wake_locked(lane)
        if wake:
            self._wake(lane)

    def _lane_locked(self, loop: asyncio.AbstractEventLoop) -> _Lane:
        if loop.is_closed():
            loop = background_loop()
        lane = self._lanes.get(loop)
        if lane is None:
            lane = self._lanes[loop] = _Lane(loop)
        return lane

    def _claim_wake_locked(self, lane: _Lane) -> bool:
        if lane.jobs and not lane.wake_pending and len(self._running) < self._max_concurrency:
            lane.wake_pending = True
            return True
        return False

    def _wake(self, lane: _Lane) -> None:
        try:
            if _current_loop() is lane.loop:
                lane.loop.call_soon(self._pump, lane)
            else:
                lane.loop.call_soon_threadsafe(self._pump, lane)
        except RuntimeError:  # the loop closed meanwhile
            self.rescue_stranded()

    # -- running ---------------------------------------------------------------------------------

    def _poll(self, lane: _Lane) -> None:
        """On the lane's loop, `hand_off_linger` after it last took offers from another loop:
        take those offered since, and poll again; none: stop polling (the next offer wakes
        the loop as the first did). (`_pump`, under the one lock it takes.)"""
        self._pump(lane, polled=True)

    def _pump(self, lane: _Lane, polled: bool = False) -> None:
        started: list[tuple[Job[P], int]] = []
        poll = 0.0
        with self._lock:
            if polled:  # `_poll`
                lane.poll_due = 0.0
                if not lane.handed or self._lanes.get(lane.loop) is not lane:
                    return
            lane.wake_pending = False
            # Offers keep coming from another loop (more than one since it was last woken, or
            # any since the last poll): this loop takes the next ones by itself, one poll at a
            # time. A run now and then (each alone within a linger) keeps its single wake-up:
            # a poll would mostly find nothing, a wake-up of its own.
            if lane.handed >= (1 if polled else 2) and not lane.poll_due and self._linger:
                poll = self._linger
                lane.poll_due = time.monotonic() + poll
            lane.handed = 0
            while lane.jobs and len(self._running) < self._max_concurrency:
                job = lane.jobs.popleft()
                self._queued -= 1
                job.state = "running"
                job.deliveries += 1
                self._running.add(job)
                started.append((job, job.deliveries))
        if poll:
            # On a fixed cadence rather than `poll` after this one ran (late, on a busy loop):
            # a timer a sink set here for a whole number of polls (a linger) then falls due
            # while the poll's runs are still being scored, and runs in that same wake-up.
            now = lane.loop.time()
            at = lane.poll_at + poll
            lane.poll_at = at = at if at > now else now + poll
            lane.loop.call_at(at, self._poll, lane)
        eager = self._eager
        template = self._job_context
        on_in_flight = self._on_in_flight
        for job, delivery in started:
            if on_in_flight is not None:
                on_in_flight(1)
            context = template.copy()
            if eager is not None and eager(job.payload):
                self._start_eagerly(lane, job, delivery, context)
            else:
                self._start_task(lane, job, delivery, context)

    def _start_task(
        self,
        lane: _Lane,
        job: Job[P],
        delivery: int,
        context: contextvars.Context,
        started: tuple[Coroutine[Any, Any, JobOutcome | None], Any] | None = None,
    ) -> None:
        """A task runs the job, or the rest of its coroutine `started` (with what it yielded)."""
        task = lane.loop.create_task(self._run(job, delivery, started), context=context)
        job.task = task
        unfinished = None if started is None else started[0]
        task.add_done_callback(
            functools.partial(self._task_done, job, delivery, unfinished, context)
        )

    def _start_eagerly(
        self, lane: _Lane, job: Job[P], delivery: int, context: contextvars.Context
    ) -> None:
        """Run the job's coroutine up to its first suspension here; a task takes it from there."""
        work = self._execute(job)
        try:
            pending = context.run(work.send, None)
        except StopIteration as stop:
            if stop.value is not None:
                self.settle(job, delivery, stop.value)
            return
        except asyncio.CancelledError:
            self._after_cancel(job, delivery)
            return
        except Exception:  # as in `_run`: one job's crash never costs the others of the pump
            logger.exception("live scoring job crashed; counted as failed")
            self.settle(job, delivery, "failed")
            return
        try:
            self._start_task(lane, job, delivery, context, (work, pending))
        except Exception:  # no task to continue in: the run ends here, in its own context
            context.run(work.close)
            logger.exception("live scoring job could not continue; counted as failed")
            self.settle(job, delivery, "failed")

    async def _run(
        self,
        job: Job[P],
        delivery: int,
        started: tuple[Coroutine[Any, Any, JobOutcome | None], Any] | None = None,
    ) -> None:
        try:
            if started is None:
                outcome = await self._execute(job)
            else:
                outcome = await resumed(*started)
        except asyncio.CancelledError:
            self._after_cancel(job, delivery)
            return
        except Exception:  # execute() is meant to catch everything; never lose the job
            logger.exception("live scoring job crashed; counted as failed")
            outcome = "failed"
        if outcome is not None:  # else `settle` is called when the job ends
            self.settle(job, delivery, outcome)

    def _task_done(
        self,
        job: Job[P],
        delivery: int,
        unfinished: Coroutine[Any, Any, JobOutcome | None] | None,
        context: contextvars.Context,
        task: asyncio.Task[None],
    ) -> None:
        # A task cancelled before its first step (a loop shutting down right after the call)
        # never ran `_run`, so nothing else would bring its job back.
        if task.cancelled():
            if unfinished is not None:  # an eager start left it suspended: unwind it in its
                context.run(unfinished.close)  # context (a no-op once it has finished)
            self._after_cancel(job, delivery)

    def settle(self, job: Job[P], delivery: int, outcome: JobOutcome) -> None:
        """End `delivery` (the job's `deliveries` when it started) of `job` with `outcome`; any
        thread may call it. A stale delivery, or a job given up meanwhile, is ignored."""
        self.settle_all([(job, delivery, outcome)])

    def settle_all(self, settled: list[tuple[Job[P], int, JobOutcome]]) -> None:
        """`settle` for each `(job, delivery, outcome)`, under one lock and with one report for
        all of them; any thread may call it."""
        finished: list[tuple[Job[P], JobOutcome]] = []
        with self._lock:
            running = self._running
            for job, delivery, outcome in settled:
                # Abandoned at shutdown while it ran, or a stale delivery of a re-homed job (its
                # loop resumed after all): the current delivery settles the job, exactly once.
                if job.state != "running" or job.deliveries != delivery:
                    continue
                job.state = "done"
                running.discard(job)
                finished.append((job, outcome))
            if not finished:
                return
            # A lane to wake has jobs, so some are queued; a waiter only waits in a drain.
            lanes = self._lanes_to_wake_locked() if self._queued else ()
            waiters = self._take_waiters_locked() if self._idle_waiters else None
        self._in_flight_ended(len(finished))
        self._report(finished)
        for lane in lanes:
            self._wake(lane)
        if waiters:
            _notify_all(waiters)

    def _in_flight_ended(self, jobs: int) -> None:
        if self._on_in_flight is not None:
            for _ in range(jobs):
                self._on_in_flight(-1)

    def _report(self, finished: list[tuple[Job[P], JobOutcome]]) -> None:
        try:
            self._on_finished(finished)
        except Exception:
            logger.exception("live scoring bookkeeping failed; ignored")

    def _after_cancel(self, job: Job[P], delivery: int) -> None:
        """A job's task was cancelled by someone else (its loop shutting down): run it again on
        the background loop, unless shutdown already gave up on it."""
        with self._lock:
            if job.state != "running" or job.deliveries != delivery:
                return
            self._running.discard(job)
            self._requeue_locked(job)
            lane = self._lane_locked(background_loop())
            wake = self._claim_wake_locked(lane)
        self._in_flight_ended(1)
        if wake:
            self._wake(lane)

    def _requeue_locked(self, job: Job[P]) -> None:
        lane = self._lane_locked(background_loop())
        job.state = "queued"
        job.committing = False
        job.lane = lane
        job.task = None
        lane.jobs.appendleft(job)
        self._queued += 1

    def _lanes_to_wake_locked(self, but: _Lane | None = None) -> list[_Lane]:
        lanes: list[_Lane] = []
        for lane in self._lanes.values():
            if lane is not but and self._claim_wake_locked(lane):
                lanes.append(lane)
        return lanes

    def _take_waiters_locked(self) -> list[Callable[[], None]]:
        if not self._idle_locked():
            return []
        waiters, self._idle_waiters = self._idle_waiters, []
        return waiters

    def _forget_dead_lanes_locked(self, idle_loops: bool = False) -> list[_Lane]:
        """Move the waiting jobs of lanes whose loop closed (or, with `idle_loops`, is not
        running) to the background lane."""
        moved: list[_Lane] = []
        for loop in [loop for loop in self._lanes if _stranded(loop, idle_loops)]:
            dead = self._lanes.pop(loop)
            if dead.jobs:
                target = self._lane_locked(background_loop())
                for job in dead.jobs:
                    job.lane = target
                target.jobs.extend(dead.jobs)
                dead.jobs.clear()
                moved.append(target)
        return moved

    def rescue_stranded(self, idle_loops: bool = False) -> None:
        """Re-home work whose loop has closed: waiting jobs, and running jobs whose task died.

        With `idle_loops` (blocking drains at shutdown) also the work of loops that are not
        running: a loop left stopped after `run_until_complete` would otherwise hold it forever.
        """
        with self._lock:
            self._forget_dead_lanes_locked(idle_loops)
            # A closed loop will never run (or report) these tasks again, whatever their state.
            lost = [
                job
                for job in self._running
                if job.lane is not None and _stranded(job.lane.loop, idle_loops)
            ]
            for job in lost:
                self._running.discard(job)
                self._requeue_locked(job)
            lanes = self._lanes_to_wake_locked()
        self._in_flight_ended(len(lost))
        for lane in lanes:
            self._wake(lane)

    # -- draining and shutdown -------------------------------------------------------------------

    async def drain(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - a deadline, re-armed
        """Wait until nothing is queued or running; False if `timeout` passed first."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.rescue_stranded()
            idle = loop.create_future()

            def notify(idle: asyncio.Future[None] = idle) -> None:
                loop.call_soon_threadsafe(_resolve, idle)

            with self._lock:
                if self._idle_locked():
                    return True
                self._idle_waiters.append(notify)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self._drop_waiter(notify)
                return False
            # Wake periodically to re-home work stranded on loops that closed meanwhile.
            wait = 0.1 if remaining is None else min(remaining, 0.1)
            try:
                await asyncio.wait_for(idle, wait)
            except TimeoutError:
                pass
            finally:  # also when the drain itself is cancelled
                self._drop_waiter(notify)

    def drain_blocking(self, timeout: float | None) -> bool:
        """`drain` for code without a running loop (close(), atexit, signal handlers).

        Called on a thread whose loop is running (a signal handler interrupting it), that loop
        cannot make progress while we wait: its jobs, waiting or running, move to the background
        loop first.
        """
        blocked = _current_loop()
        if blocked is not None:
            self._evacuate(blocked)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.rescue_stranded(idle_loops=True)
            idle = threading.Event()
            with self._lock:
                if self._idle_locked():
                    return True
                self._idle_waiters.append(idle.set)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self._drop_waiter(idle.set)
                return False
            idle.wait(0.1 if remaining is None else min(remaining, 0.1))
            self._drop_waiter(idle.set)

    def _drop_waiter(self, waiter: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._idle_waiters.remove(waiter)

    def _evacuate(self, loop: asyncio.AbstractEventLoop) -> None:
        """Move all work of `loop` (blocked under us) to the background loop. Its running jobs
        start over there; should `loop` resume later, those old deliveries are stale."""
        with self._lock:
            lane = self._lanes.pop(loop, None)
            if lane is not None and lane.jobs:
                target = self._lane_locked(background_loop())
                for job in lane.jobs:
                    job.lane = target
                target.jobs.extend(lane.jobs)
            stuck = [j for j in self._running if j.lane is not None and j.lane.loop is loop]
            for job in stuck:
                self._running.discard(job)
                self._requeue_locked(job)
            lanes = self._lanes_to_wake_locked()
        self._in_flight_ended(len(stuck))
        for target_lane in lanes:
            self._wake(target_lane)

    def close(self) -> None:
        """Refuse new jobs from now on."""
        with self._lock:
            self._closed = True

    def begin_commit(self, job: Job[P]) -> bool:
        """Called by `execute` before it stores the job's result: False when shutdown gave the
        job up already (count it as dropped and store nothing); True means shutdown will wait
        for this job instead of giving it up, so a stored run is never counted as dropped."""
        with self._lock:
            if job.state != "running":
                return False
            job.committing = True
            return True

    def abandon_all(self) -> int:
        """Give up on everything still queued or running; returns how many jobs that was."""
        with self._lock:
            waiting: list[Job[P]] = []
            for lane in self._lanes.values():
                waiting.extend(lane.jobs)
                lane.jobs.clear()
            self._queued = 0
            for job in waiting:
                job.state = "done"
            running = list(self._running)
        if waiting:
            self._report([(job, "dropped_shutdown") for job in waiting])
        return len(waiting) + self._abandon(running)

    def _abandon(self, jobs: list[Job[P]]) -> int:
        given_up: list[Job[P]] = []
        with self._lock:
            for job in jobs:
                if job.state == "done" or job.committing:
                    continue
                job.state = "done"
                self._running.discard(job)
                given_up.append(job)
            waiters = self._take_waiters_locked()
        for job in given_up:
            self._in_flight_ended(1)
            self._report([(job, "dropped_shutdown")])
            task = job.task
            if task is not None and job.lane is not None and not job.lane.loop.is_closed():
                with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                    job.lane.loop.call_soon_threadsafe(task.cancel)
        _notify_all(waiters)
        return len(given_up)


def _stranded(loop: asyncio.AbstractEventLoop, idle_loops: bool) -> bool:
    if loop.is_closed():
        return True
    # The background loop may not have entered run_forever yet; it never stays idle.
    return idle_loops and not loop.is_running() and loop is not background_loop()


def _notify_all(waiters: list[Callable[[], None]]) -> None:
    for notify in waiters:
        with contextlib.suppress(RuntimeError):  # a drain whose loop has closed meanwhile
            notify()


@types.coroutine
def resumed(
    work: Generator[Any, None, T] | Coroutine[Any, Any, T], pending: Any
) -> Generator[Any, None, T]:
    """The rest of `work` (a coroutine, or an awaitable's `__await__()` iterator), which has
    run up to yielding `pending` (a future, or None to let the loop run once): what a task
    awaits to continue, where it stopped, work that was started without one (an eagerly
    started job; a body read that turned out to wait, `server/http/body.py`)."""
    while True:
        try:
            yield pending
        except GeneratorExit:
            work.close()
            raise
        except BaseException as error:  # thrown in by the task (cancelled): `work` handles it
            try:
                pending = work.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
        else:
            try:
                pending = work.send(None)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
