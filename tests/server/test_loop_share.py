"""`LoopShare`: scorer runs ready at once do not all start in one event loop iteration."""

from __future__ import annotations

import asyncio
import time

import pytest

from scorewatch.server.loop_share import LoopShare

pytestmark = pytest.mark.unit


def test_runs_past_the_slice_wait_for_a_later_iteration_and_all_run() -> None:
    async def main() -> tuple[int, list[int]]:
        share = LoopShare(0.01)
        started: list[int] = []

        async def run(index: int) -> None:
            await share.turn()
            started.append(index)
            _hold_the_loop(0.004)

        tasks = [asyncio.create_task(run(index)) for index in range(10)]
        # This task resumes in the same iteration as the runs' first steps, after them.
        await asyncio.sleep(0)
        in_first_iteration = len(started)
        await asyncio.gather(*tasks)
        return in_first_iteration, started

    in_first_iteration, started = asyncio.run(main())
    # 10 ms of slice, 4 ms per run: at most 3 start before the loop polls its sockets again.
    assert 1 <= in_first_iteration <= 3, in_first_iteration
    assert sorted(started) == list(range(10))


def _hold_the_loop(seconds: float) -> None:
    """CPU work that holds the loop, as a scorer's step does."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_cancelled_waiter_does_not_stop_the_others() -> None:
    async def main() -> list[int]:
        share = LoopShare(0.0)
        started: list[int] = []

        async def run(index: int) -> None:
            await share.turn()
            started.append(index)

        tasks = [asyncio.create_task(run(index)) for index in range(4)]
        await asyncio.sleep(0)
        tasks[1].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return started

    assert asyncio.run(main()) == [0, 2, 3]
