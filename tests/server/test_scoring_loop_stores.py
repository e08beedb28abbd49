"""In serve's configuration (one SQLite sink `on_caller_loop`, a `ScoringLoop`) the scoring
loop stores its runs itself: every accepted run is stored once, on that loop's thread, waited
results are answered without the linger, and the counts add up after shutdown."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from scorewatch.core.call import AgentCall
from scorewatch.live.entry import LiveScorerEntry, Sampling
from scorewatch.scorers.registry import build_scorer
from scorewatch.server.intake.in_process import InProcessIntake
from scorewatch.server.intake.interface import ScoreItem
from scorewatch.server.intake.scoring_loop import ScoringLoop
from scorewatch.sinks.sqlite import SqliteSink

pytestmark = pytest.mark.integration


class WatchedSink(SqliteSink):
    """The real sink, recording which thread commits each transaction."""

    def __init__(self, path: Path, **options: Any) -> None:
        self.threads: list[str] = []
        super().__init__(path, **options)

    def _store(self, rows: list[tuple[Any, ...]]) -> None:
        super()._store(rows)
        self.threads.append(threading.current_thread().name)


def _item(index: int) -> ScoreItem:
    call = AgentCall(input="What is the refund policy?", output=f"30 days. {index}", target="bot")
    return ScoreItem(call, size=100)


async def test_the_scoring_loop_stores_each_run_once_and_answers_waits_at_once(
    tmp_path: Path,
) -> None:
    db = tmp_path / "scores.db"
    # A linger far longer than the test: only urgent writes and shutdown may end it.
    sink = WatchedSink(db, linger=30.0, on_caller_loop=True)
    entries = {"similarity": LiveScorerEntry(build_scorer("content-similarity"), Sampling.ratio(1))}
    intake = InProcessIntake(
        entries, sinks=[sink], max_concurrency=8, max_queue=1000, scoring=ScoringLoop()
    )
    accepted: list[str] = []
    for index in range(40):
        if index % 10 == 9:  # a client waiting for its score
            started = time.monotonic()
            (admission,) = await intake.admit([_item(index)], want_results=True)
            assert admission.results is not None
            (record,) = await asyncio.wait_for(asyncio.gather(*admission.results.values()), 10)
            assert record.score is not None
            assert time.monotonic() - started < 10  # not the 30 s linger
        else:
            (admission,) = await intake.admit([_item(index)])
        accepted.extend(run.run_id for run in admission.accepted)
    assert await intake.shutdown(20) == 0
    stats = intake.stats()
    await intake.aclose()
    assert stats["scored"] == 40 and stats["queued"] == 0 and stats["in_flight"] == 0
    assert set(sink.threads) == {"scorewatch-scoring-loop"}
    with sqlite3.connect(db) as conn:
        stored = [row[0] for row in conn.execute('SELECT "id" FROM mastra_scorers')]
    assert sorted(stored) == sorted(accepted) and len(set(accepted)) == 40
