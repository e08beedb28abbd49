"""`ScoringLoop`: coroutines run on a loop of their own thread, awaited from the caller's loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from scorewatch.server.intake.scoring_loop import ScoringLoop

pytestmark = pytest.mark.unit


async def test_run_executes_on_the_scoring_thread_and_returns_its_result() -> None:
    scoring = ScoringLoop(name="test-scoring")
    try:

        async def where() -> tuple[str, asyncio.AbstractEventLoop]:
            await asyncio.sleep(0)
            return threading.current_thread().name, asyncio.get_running_loop()

        name, loop = await scoring.run(where())
        assert name == "test-scoring"
        assert loop is scoring.loop and loop is not asyncio.get_running_loop()
        assert scoring.alive
    finally:
        await asyncio.to_thread(scoring.close)
    assert not scoring.alive


async def test_cancelling_the_caller_cancels_the_coroutine_on_the_scoring_loop() -> None:
    scoring = ScoringLoop()
    started, cancelled = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    try:
        waiting = asyncio.ensure_future(scoring.run(forever()))
        assert await asyncio.to_thread(started.wait, 10)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await asyncio.to_thread(cancelled.wait, 10)
    finally:
        await asyncio.to_thread(scoring.close)


def test_close_cancels_what_still_runs_and_is_idempotent() -> None:
    scoring = ScoringLoop()
    started, unwound = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            unwound.set()

    scoring.submit(forever())
    assert started.wait(10)
    scoring.close()
    assert unwound.is_set()
    assert not scoring.alive
    scoring.close()
    with pytest.raises(RuntimeError):
        _ = scoring.loop


def test_a_loop_never_started_closes_without_a_thread() -> None:
    scoring = ScoringLoop()
    assert scoring.alive
    scoring.close()
    assert not scoring.alive


@pytest.mark.parametrize("kind", ["default", "asyncio"])
def test_the_loop_is_uvloops_when_installed_unless_another_is_asked_for(kind: str) -> None:
    uvloop = pytest.importorskip("uvloop")
    scoring = ScoringLoop() if kind == "default" else ScoringLoop(new_loop=asyncio.new_event_loop)
    try:
        loop = scoring.loop
        assert isinstance(loop, uvloop.Loop) == (kind == "default")

        async def answer() -> int:
            await asyncio.sleep(0.001)  # a timer, then the answer across threads
            return 42

        assert scoring.submit(answer()).result(10) == 42
    finally:
        scoring.close()
    assert not scoring.alive
