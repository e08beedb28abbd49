"""`WorkQueue.hand_off_linger`: jobs offered from another thread's loop wait to be handed over
in one wake-up, and nothing but the wait changes: each runs exactly once, a waiting caller
(`hand_off_now`), a freed slot and a drain take them at once, a timer lost with its loop strands
nothing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from scorewatch.live.work_queue import Job, JobOutcome, WorkQueue

pytestmark = pytest.mark.unit

LONG = 600.0  # a linger no test waits out: what runs was handed over by something else


@pytest.fixture
def target() -> Iterator[asyncio.AbstractEventLoop]:
    """The loop the jobs run on, in a thread of its own (serve's scoring loop)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


class _Ran:
    def __init__(self) -> None:
        self.payloads: list[int] = []
        self.changed = threading.Condition()
        self.release = threading.Event()

    async def execute(self, job: Job[int]) -> JobOutcome | None:
        with self.changed:
            self.payloads.append(job.payload)
            self.changed.notify_all()
        if job.payload < 0:  # holds its slot until released (set from another thread)
            await asyncio.to_thread(self.release.wait, 30)
        return "scored"

    def wait_for(self, count: int) -> list[int]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.payloads) >= count, 30), self.payloads
            return sorted(self.payloads)


def _spin(loop: asyncio.AbstractEventLoop) -> None:
    """Let `loop` run a few iterations: it would have pumped anything it had been woken for."""
    for _ in range(3):
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(10)


def _offer(queue: WorkQueue[int], loop: asyncio.AbstractEventLoop, *payloads: int) -> None:
    async def offer() -> None:  # from a running loop of this thread, as serve's HTTP loop
        for payload in payloads:
            assert queue.offer(payload, loop=loop) == "accepted"

    asyncio.run(offer())


def test_a_waiting_caller_takes_lingering_jobs_at_once(target: asyncio.AbstractEventLoop) -> None:
    ran = _Ran()
    queue: WorkQueue[int] = WorkQueue(ran.execute, max_queue=10, max_concurrency=4)
    queue.hand_off_linger = LONG
    _offer(queue, target, 1, 2, 3)
    _spin(target)
    assert ran.payloads == [] and queue.queued == 3  # lingering
    queue.hand_off_now(target)
    assert ran.wait_for(3) == [1, 2, 3]
    assert queue.drain_blocking(30)
    assert sorted(ran.payloads) == [1, 2, 3]  # once each


def test_a_freed_slot_takes_lingering_jobs(target: asyncio.AbstractEventLoop) -> None:
    ran = _Ran()
    queue: WorkQueue[int] = WorkQueue(ran.execute, max_queue=10, max_concurrency=1)
    queue.hand_off_linger = LONG
    _offer(queue, target, -1)
    queue.hand_off_now(target)
    ran.wait_for(1)  # holds the only slot
    _offer(queue, target, 2)
    _spin(target)
    ran.release.set()  # its slot, freed on the target loop, takes the lingering job
    assert ran.wait_for(2) == [-1, 2]
    assert queue.drain_blocking(30)


def test_a_timer_lost_with_its_loop_strands_nothing(target: asyncio.AbstractEventLoop) -> None:
    ran = _Ran()
    queue: WorkQueue[int] = WorkQueue(ran.execute, max_queue=10, max_concurrency=4)
    queue.hand_off_linger = LONG
    _offer(queue, target, 1)  # its loop closes with the linger's timer pending
    _offer(queue, target, 2)
    assert queue.drain_blocking(30)  # the drain hands them over
    assert sorted(ran.payloads) == [1, 2]


def test_without_a_linger_each_offer_wakes_the_loop(target: asyncio.AbstractEventLoop) -> None:
    ran = _Ran()
    queue: WorkQueue[int] = WorkQueue(ran.execute, max_queue=10, max_concurrency=4)
    _offer(queue, target, 1)
    assert ran.wait_for(1) == [1]
    with pytest.raises(ValueError, match="hand_off_linger"):
        queue.hand_off_linger = -1.0


def test_a_stream_polled_by_the_lane_runs_each_job_once() -> None:
    """Offers keep coming from a loop that stays up: the lane's loop takes them by its own
    polls, or a timer of the offering loop hands them over once a poll found nothing; either
    way each runs once and nothing is left."""
    ran = _Ran()
    queue: WorkQueue[int] = WorkQueue(ran.execute, max_queue=1000, max_concurrency=4)
    queue.hand_off_linger = 0.001
    target = asyncio.new_event_loop()
    runner = threading.Thread(target=target.run_forever, daemon=True)
    runner.start()

    async def stream() -> None:  # from a running loop of this thread, as serve's HTTP loop
        for payload in range(300):
            assert queue.offer(payload, loop=target) == "accepted"
            await asyncio.sleep(0 if payload % 3 else 0.001)
        while queue.queued or queue.in_flight:  # noqa: ASYNC110 - what a drain does, here
            await asyncio.sleep(0.001)

    try:
        asyncio.run(stream())
        assert ran.wait_for(300) == list(range(300))
        assert len(ran.payloads) == 300  # once each
    finally:
        target.call_soon_threadsafe(target.stop)
        runner.join(10)
        target.close()


def test_a_poll_lost_with_its_loop_strands_nothing() -> None:
    ran = _Ran()
    queue: WorkQueue[int] = WorkQueue(ran.execute, max_queue=10, max_concurrency=4)
    queue.hand_off_linger = LONG
    target = asyncio.new_event_loop()
    runner = threading.Thread(target=target.run_forever, daemon=True)
    runner.start()
    _offer(queue, target, 1, 2)
    queue.hand_off_now(target)  # two taken at once: the lane's loop polls for the next ones
    assert ran.wait_for(2) == [1, 2]
    _offer(queue, target, 3)  # left to the poll, which its loop closes under
    target.call_soon_threadsafe(target.stop)
    runner.join(10)
    target.close()
    _offer(queue, target, 4)
    assert queue.drain_blocking(30)  # the drain hands them over
    assert sorted(ran.payloads) == [1, 2, 3, 4]
