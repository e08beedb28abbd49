"""Model-free runs start eagerly and end on the SQLite writer's acknowledgment (`WorkQueue`'s
`eager`, `Storage.store_then`): no task per run, yet the same rows, counts and isolation as the
task-per-run path. A step that returns an awaitable still suspends and finishes in a task; a
run that raises fails alone; a row the sink refuses is stored as unstorable, as before."""

from __future__ import annotations

import asyncio
import contextvars
import math
import sqlite3
from collections.abc import Coroutine, Generator
from pathlib import Path
from typing import Any

import pytest

import scorewatch as sw
from live_support import accepted_runs_accounted
from scorewatch.live import AgentCall, LiveScoring, SqliteSink
from scorewatch.live.engine import ScoringEngine
from scorewatch.live.entry import LiveScorerEntry

pytestmark = pytest.mark.integration


def _rows(db: Path) -> dict[str, tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        query = 'SELECT "id", "score", "status", "errorCode" FROM mastra_scorers'
        return {row[0]: row[1:] for row in conn.execute(query)}


def _length_scorer() -> sw.Scorer:
    def score(ctx: sw.StepContext) -> float:
        if ctx.run.output == "boom":
            raise ValueError("this item breaks the scorer")
        return len(str(ctx.run.output)) / 10

    return sw.create_scorer(id="length", description="output length").generate_score(score)


def _count_tasks(loop: asyncio.AbstractEventLoop) -> list[int]:
    created = [0]

    def factory(
        loop: asyncio.AbstractEventLoop,
        coro: Generator[Any, None, Any] | Coroutine[Any, Any, Any],
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[Any]:
        created[0] += 1
        return asyncio.Task(coro, loop=loop, context=context)

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    return created


async def test_model_free_runs_cost_no_task_and_store_what_tasks_stored(tmp_path: Path) -> None:
    db = tmp_path / "scores.db"
    live = LiveScoring(
        {"length": _length_scorer()}, sinks=[SqliteSink(db, linger=0.005)], drain_on_exit=False
    )
    created = _count_tasks(asyncio.get_running_loop())
    outputs = [f"answer {i}" for i in range(40)] + ["boom"]
    for index, output in enumerate(outputs):
        live.submit(input="q", output=output, target="bot", run_id=f"run-{index}")
    assert await live.drain(10)
    tasks_for_runs = created[0]
    stats = live.stats()
    await live.aclose()
    assert tasks_for_runs == 0  # every run started in the pump and ended on the writer's ack
    assert stats["scored"] == 40 and stats["failed"] == 1 and accepted_runs_accounted(stats)
    rows = _rows(db)
    assert len(rows) == 41
    by_output = {row: rows[f"scoring-length-run-{i}-bot"] for i, row in enumerate(outputs)}
    for output, (score, status, _code) in by_output.items():
        if output == "boom":  # the bad item failed alone; every other was scored
            assert (score, status) == (None, "failed")
        else:
            assert status == "success" and math.isclose(score, len(output) / 10)


async def test_a_step_returning_an_awaitable_suspends_and_finishes_in_a_task(
    tmp_path: Path,
) -> None:
    async def later(value: float) -> float:
        await asyncio.sleep(0.01)
        return value

    scorer = sw.create_scorer(id="later", description="scores after a pause").generate_score(
        lambda ctx: later(0.25)
    )
    db = tmp_path / "scores.db"
    engine = ScoringEngine({"later": LiveScorerEntry(scorer)}, sinks=[SqliteSink(db)])
    created = _count_tasks(asyncio.get_running_loop())
    for index in range(3):
        engine.offer(AgentCall(input="q", output="a", target="bot", run_id=f"r{index}"))
    assert await engine.drain(10)
    assert created[0] == 3  # one continuation each, from where the run suspended
    assert engine.stats()["scored"] == 3
    await engine.aclose()
    assert {row[:2] for row in _rows(db).values()} == {(0.25, "success")}


class RefusingSink(SqliteSink):
    """The real sink, whose database refuses one run's row (a constraint the row breaks)."""

    def _store(self, rows: list[tuple[Any, ...]]) -> None:
        if any("poison" in str(value) for row in rows for value in row[1:]):  # the content
            raise sqlite3.IntegrityError("refused")
        super()._store(rows)


async def test_a_refused_row_is_stored_as_unstorable_after_the_acknowledgment(
    tmp_path: Path,
) -> None:
    db = tmp_path / "scores.db"
    live = LiveScoring({"length": _length_scorer()}, sinks=[RefusingSink(db)], drain_on_exit=False)
    live.submit(input="q", output="fine", target="bot", run_id="ok")
    live.submit(input="q", output="poison", target="bot", run_id="bad")
    assert await live.drain(10)
    errors = live.sink_errors()
    stats = live.stats()
    await live.aclose()
    assert errors == {"sqlite": 1}  # the refused write, counted once
    assert stats["scored"] == 1 and stats["failed"] == 1 and accepted_runs_accounted(stats)
    rows = _rows(db)
    assert rows["scoring-length-ok-bot"][:2] == (0.4, "success")
    assert rows["scoring-length-bad-bot"] == (None, "failed", "unstorable")


async def test_a_run_a_client_waits_for_is_stored_without_the_writers_linger(
    tmp_path: Path,
) -> None:
    # serve's `?wait=true`: the run's `done` future is answered once the row is committed. The
    # writer lingers (30 s here) for rows nobody waits for, never for this one.
    from scorewatch.live.engine import Run

    db = tmp_path / "scores.db"
    engine = ScoringEngine(
        {"length": LiveScorerEntry(_length_scorer())}, sinks=[SqliteSink(db, linger=30.0)]
    )
    scorer = engine.entries["length"].scorer
    loop = asyncio.get_running_loop()
    unwaited = Run(scorer, "unwaited", AgentCall(input="q", output="abc", target="bot"))
    assert engine.enqueue(unwaited) == "sampled"
    await asyncio.sleep(0.1)  # scored; its row waits in the lingering writer
    assert _rows(db) == {}
    done: asyncio.Future[Any] = loop.create_future()
    waited = Run(scorer, "waited", AgentCall(input="q", output="abcd", target="bot"), done)
    assert engine.enqueue(waited) == "sampled"
    stored = await asyncio.wait_for(done, 5)  # far sooner than the linger
    assert stored.id == "waited" and stored.status == "success"
    assert set(_rows(db)) == {"unwaited", "waited"}  # committed together, before the answer
    assert await engine.drain(5)
    await engine.aclose()


async def test_runs_waiting_for_a_slot_end_the_writers_linger(tmp_path: Path) -> None:
    # A run holds its slot until its row is stored: while runs wait for a slot, a lingering
    # writer would hold them back too, so their rows are stored at once.
    db = tmp_path / "scores.db"
    engine = ScoringEngine(
        {"length": LiveScorerEntry(_length_scorer())},
        sinks=[SqliteSink(db, linger=30.0)],
        max_concurrency=2,
    )
    for index in range(10):
        engine.offer(AgentCall(input="q", output="a" * index, target="bot", run_id=f"r{index}"))
    deadline = asyncio.get_running_loop().time() + 5  # far sooner than the linger
    while len(_rows(db)) < 8:  # the last runs had nobody behind them: they may linger
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)
    await engine.aclose()  # closing ends the linger: every row is stored
    assert len(_rows(db)) == 10 and engine.stats()["scored"] == 10
