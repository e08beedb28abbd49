"""`LoopLag`: a loop that stops running its callbacks shows as lateness; a free one recovers."""

from __future__ import annotations

import asyncio
import time

import pytest

from scorewatch.server.intake.loop_lag import LoopLag

pytestmark = pytest.mark.unit


async def test_a_blocked_loop_shows_as_lag_that_fades_once_it_runs_again() -> None:
    lag = LoopLag(interval=0.01, window=0.5)
    assert lag.seconds() == 0.0
    lag.watch()
    lag.watch()  # once
    try:
        await asyncio.sleep(0.05)
        time.sleep(0.6)  # noqa: ASYNC251 - the loop runs nothing for 0.6 s
        await asyncio.sleep(0.02)  # the overdue tick fires
        blocked = lag.seconds()
        # Weighted by the time it covered, one long-late tick moves the average at once.
        assert blocked > 0.25, blocked
        await asyncio.sleep(1.5)
        assert lag.seconds() < blocked / 2, (lag.seconds(), blocked)
    finally:
        lag.close()
