"""How many runs may wait (`live.max_queue_delay` at the measured rate) is read twice per request
(`refuse_early`, then `admit`) and kept between reads: it must follow the rate as soon as a
finished run changes it, in both places."""

from __future__ import annotations

import asyncio

import pytest

from live_support import constant_scorer
from scorewatch.core.call import AgentCall
from scorewatch.live import LiveScorerEntry
from scorewatch.server.intake.in_process import InProcessIntake
from scorewatch.server.intake.interface import QueueFullError, ScoreItem

pytestmark = pytest.mark.unit


def _item(number: int) -> ScoreItem:
    return ScoreItem(AgentCall(input="q", output="a", target="bot", run_id=f"r{number}"))


def test_the_runs_that_may_wait_follow_the_measured_rate() -> None:
    async def scenario() -> None:
        intake = InProcessIntake(
            {"every": LiveScorerEntry(constant_scorer("every"))},
            sinks=[],
            max_concurrency=1,
            max_queue=1000,
            max_queue_delay=1.0,
        )
        timing = intake._throughput  # what stored runs report, driven here by hand
        assert intake.refuse_early() is None  # no rate yet: nothing is refused for delay
        for _ in range(20):
            timing.finished(0.1)  # 10 runs/s: 10 may wait
        for number in range(10):
            await intake.admit([_item(number)])
        assert intake.refuse_early() == 1  # 1 run too many at 10 runs/s: a second
        with pytest.raises(QueueFullError) as refused:
            await intake.admit([_item(10)])
        assert "at the 10 runs/s" in (refused.value.detail or "")
        assert refused.value.free == 0
        # Runs get faster: more may wait, at once, in both reads.
        for _ in range(200):
            timing.finished(0.01)
        assert intake.refuse_early() is None
        (admitted,) = await intake.admit([_item(11)])
        assert [run.scorer for run in admitted.accepted] == ["every"]
        # And slower again: fewer.
        for _ in range(400):
            timing.finished(0.5)
        assert intake.refuse_early() is not None
        with pytest.raises(QueueFullError) as refused:
            await intake.admit([_item(12)])
        assert "at the 2 runs/s" in (refused.value.detail or "")
        await intake.shutdown(0.1)
        await intake.aclose()

    asyncio.run(scenario())
