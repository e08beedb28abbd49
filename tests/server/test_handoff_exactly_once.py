"""The hand-off from the admitting loop to the scoring loop, in serve's configuration (a
`ScoringLoop`, the SQLite sink storing on it, runs handed over with a linger and polled): every
accepted run ends exactly once, stored once or counted as given up, also when the sink fails
for a while, refuses rows, or shutdown comes while runs wait and run; the held bytes, the queue
and the runs in flight all come back to zero. Also with serve's own linger and concurrency, where
a transaction holds many runs and their acknowledgements are settled together."""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from scorewatch.core.call import AgentCall
from scorewatch.live.entry import LiveScorerEntry, Sampling
from scorewatch.scorers.registry import build_scorer
from scorewatch.server.intake.in_process import InProcessIntake
from scorewatch.server.intake.interface import ScoreItem
from scorewatch.server.intake.scoring_loop import ScoringLoop
from scorewatch.sinks.sqlite import SERVICE_LINGER_S, SqliteSink

pytestmark = pytest.mark.integration


class FlakySink(SqliteSink):
    """The real sink: down for its first `outages` transactions, refusing rows whose output
    says "poison", and counting every row it commits (by run id) and every transaction's rows
    (`batches`)."""

    def __init__(self, path: Path, *, outages: int = 0, **options: Any) -> None:
        self.outages = outages
        self.committed: collections.Counter[str] = collections.Counter()
        self.batches: list[int] = []
        self._guard = threading.Lock()
        super().__init__(path, **options)

    def _store(self, rows: list[tuple[Any, ...]]) -> None:
        with self._guard:
            if self.outages > 0:
                self.outages -= 1
                raise sqlite3.OperationalError("database is locked")
        if any("poison" in str(value) for row in rows for value in row[1:]):
            raise sqlite3.IntegrityError("refused")
        super()._store(rows)
        with self._guard:
            self.committed.update(str(row[0]) for row in rows)
            self.batches.append(len(rows))


def _item(index: int) -> ScoreItem:
    output = f"poison {index}" if index % 17 == 5 else f"30 days. {index}"
    call = AgentCall(input="What is the refund policy?", output=output, target="bot")
    return ScoreItem(call, size=100 + index)


def _intake(sink: FlakySink, *, max_concurrency: int = 4) -> InProcessIntake:
    entries = {
        "similarity": LiveScorerEntry(build_scorer("content-similarity"), Sampling.ratio(1)),
        "half": LiveScorerEntry(build_scorer("content-similarity"), Sampling.ratio(0.5)),
    }
    return InProcessIntake(
        entries,
        sinks=[sink],
        max_concurrency=max_concurrency,
        max_queue=10_000,
        sink_retry_timeout=30.0,
        scoring=ScoringLoop(),
    )


def _stored_ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute('SELECT "id" FROM mastra_scorers')]


def _check_accounted(stats: dict[str, int], accepted: list[str]) -> None:
    assert len(set(accepted)) == len(accepted)
    assert stats["sampled"] == len(accepted)
    ended = stats["scored"] + stats["not_scorable"] + stats["failed"] + stats["dropped_shutdown"]
    assert ended == stats["sampled"]
    assert stats["queued"] == 0 and stats["in_flight"] == 0 and stats["queued_bytes"] == 0


async def _admit_all(intake: InProcessIntake, count: int) -> list[str]:
    accepted: list[str] = []
    for index in range(count):
        # Several items per request now and then: one request's runs are handed over together.
        items = [_item(index)] if index % 5 else [_item(index), _item(index + 10_000)]
        for admission in await intake.admit(items):
            accepted.extend(run.run_id for run in admission.accepted)
        if index % 7 == 0:
            await asyncio.sleep(0)  # the admitting loop lets time pass now and then
    return accepted


# (linger, slots): also serve's linger and many slots, so that transactions hold many runs,
# acknowledged together.
@pytest.mark.parametrize(("linger", "slots"), [(0.002, 4), (SERVICE_LINGER_S, 64)])
async def test_a_failing_sink_costs_no_run_and_stores_none_twice(
    tmp_path: Path, linger: float, slots: int
) -> None:
    db = tmp_path / "scores.db"
    sink = FlakySink(db, outages=3, linger=linger, on_caller_loop=True)
    intake = _intake(sink, max_concurrency=slots)
    accepted = await _admit_all(intake, 120)
    assert await intake.shutdown(60) == 0
    stats = intake.stats()
    await intake.aclose()
    _check_accounted(stats, accepted)
    assert stats["dropped_shutdown"] == 0
    # Every run committed exactly once (outages and refusals commit nothing; a refused row is
    # committed as unstorable by a write of its own, and counted failed).
    assert set(_stored_ids(db)) == set(sink.committed) == set(accepted)
    assert all(times == 1 for times in sink.committed.values())
    assert stats["failed"] > 0
    if slots > 4:  # the case this setting is for: transactions of several runs
        assert max(sink.batches) > 1


@pytest.mark.parametrize("grace", [0.0, 0.05])
async def test_shutdown_while_runs_wait_and_run_ends_each_once(
    tmp_path: Path, grace: float
) -> None:
    db = tmp_path / "scores.db"
    # Down long enough that shutdown finds runs storing, running and waiting.
    sink = FlakySink(db, outages=1_000_000, linger=0.002, on_caller_loop=True)
    intake = _intake(sink, max_concurrency=3)
    accepted = await _admit_all(intake, 80)
    await asyncio.sleep(grace)
    given_up = await intake.shutdown(0.2)
    stats = intake.stats()
    await intake.aclose()
    _check_accounted(stats, accepted)
    assert given_up > 0 and stats["dropped_shutdown"] == given_up
    # Nothing was committed while the sink was down; a run given up is never stored after.
    stored = _stored_ids(db) if db.exists() else []
    assert len(stored) == len(set(stored)) == sum(sink.committed.values())
    assert set(stored) <= set(accepted)


@pytest.mark.parametrize(("linger", "slots"), [(0.002, 2), (SERVICE_LINGER_S, 64)])
async def test_shutdown_with_a_working_sink_stores_the_rest_once(
    tmp_path: Path, linger: float, slots: int
) -> None:
    db = tmp_path / "scores.db"
    sink = FlakySink(db, linger=linger, on_caller_loop=True)
    intake = _intake(sink, max_concurrency=slots)
    accepted = await _admit_all(intake, 150)
    given_up = await intake.shutdown(0.01)  # mid-batch: some runs still wait
    stats = intake.stats()
    await intake.aclose()
    _check_accounted(stats, accepted)
    assert stats["dropped_shutdown"] == given_up
    stored = _stored_ids(db)
    assert all(times == 1 for times in sink.committed.values())
    assert len(stored) == stats["scored"] + stats["failed"]  # failed: the refused rows
    assert set(stored) <= set(accepted)
