"""Property test of the live queue's accounting under random submissions, completions,
failures and shutdowns: every accepted run is counted exactly once, bounds always hold. Also
with jobs started eagerly (some ending without suspending, the others continuing in a task),
and with jobs that end after their coroutine, through `settle`, or several together through
`settle_all` (a transaction's runs acknowledged at once)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorewatch.live.work_queue import Job, JobOutcome, WorkQueue

pytestmark = pytest.mark.unit

Step = tuple[str, int]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("offer"), st.integers(1, 30)),
        st.tuples(st.just("finish"), st.integers(1, 10)),
        st.tuples(st.just("fail"), st.integers(1, 10)),
        st.tuples(st.just("spin"), st.integers(1, 3)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(
    plan=steps,
    max_queue=st.integers(0, 12),
    max_concurrency=st.integers(1, 5),
    drain_first=st.booleans(),
    mode=st.sampled_from(["task", "eager", "eager-settled-later", "eager-settled-together"]),
)
def test_every_accepted_run_ends_exactly_once(
    plan: list[Step], max_queue: int, max_concurrency: int, drain_first: bool, mode: str
) -> None:
    asyncio.run(_scenario(plan, max_queue, max_concurrency, drain_first, mode))


async def _scenario(
    plan: list[Step], max_queue: int, max_concurrency: int, drain_first: bool, mode: str = "task"
) -> None:
    releases: dict[int, asyncio.Future[JobOutcome]] = {}
    outcomes: dict[int, list[JobOutcome]] = {}
    in_flight_gauge = 0
    peak_running = 0
    settling: list[tuple[Job[int], int, JobOutcome]] = []

    def settle_together() -> None:
        together = settling.copy()
        settling.clear()
        queue.settle_all(together)

    async def execute(job: Job[int]) -> JobOutcome | None:
        nonlocal peak_running
        peak_running = max(peak_running, queue.in_flight)
        delivery = job.deliveries
        if mode != "task" and job.payload % 3 == 0:
            return "scored"  # started eagerly, never suspends: no task at all
        release = asyncio.get_running_loop().create_future()
        releases[job.payload] = release
        outcome = await release
        if mode == "eager-settled-later":
            asyncio.get_running_loop().call_soon(queue.settle, job, delivery, outcome)
            return None
        if mode == "eager-settled-together":  # those ending within a loop turn, at once
            if not settling:
                asyncio.get_running_loop().call_soon(settle_together)
            settling.append((job, delivery, outcome))
            return None
        return outcome

    def on_in_flight(delta: int) -> None:
        nonlocal in_flight_gauge
        in_flight_gauge += delta

    def on_finished(finished: list[tuple[Job[int], JobOutcome]]) -> None:
        for job, outcome in finished:
            outcomes.setdefault(job.payload, []).append(outcome)

    queue: WorkQueue[int] = WorkQueue(
        execute,
        max_queue=max_queue,
        max_concurrency=max_concurrency,
        on_in_flight=on_in_flight,
        on_finished=on_finished,
        eager=None if mode == "task" else (lambda payload: True),
    )
    accepted: set[int] = set()
    refused = 0
    next_id = 0
    for action, amount in plan:
        if action == "offer":
            for _ in range(amount):
                if queue.offer(next_id) == "accepted":
                    accepted.add(next_id)
                else:
                    refused += 1
                next_id += 1
        elif action in ("finish", "fail"):
            waiting = [key for key, future in releases.items() if not future.done()]
            for key in waiting[:amount]:
                releases[key].set_result("scored" if action == "finish" else "failed")
        for _ in range(amount if action == "spin" else 1):
            await asyncio.sleep(0)
        assert queue.queued <= max_queue
        assert queue.in_flight <= max_concurrency
        assert in_flight_gauge == queue.in_flight
        assert len(accepted) == queue.queued + queue.in_flight + len(outcomes)

    queue.close()
    assert queue.offer(next_id) == "closed"
    if drain_first:
        for future in releases.values():
            if not future.done():
                future.set_result("scored")
        while queue.queued or queue.in_flight:
            for future in releases.values():
                if not future.done():
                    future.set_result("scored")
            await asyncio.sleep(0)
    given_up = queue.abandon_all()
    for _ in range(3):  # cancelled tasks unwind, late settlements arrive (and are ignored)
        await asyncio.sleep(0)
    assert refused + len(accepted) == next_id
    assert set(outcomes) == accepted
    assert all(len(ends) == 1 for ends in outcomes.values())
    dropped = sum(ends == ["dropped_shutdown"] for ends in outcomes.values())
    assert dropped == given_up
    assert queue.queued == queue.in_flight == in_flight_gauge == 0
    assert peak_running <= max_concurrency
