"""A SQLite sink with a `linger` stores rows that arrive apart in one transaction, stores each
row once, and still stores everything queued when it is closed mid-wait; an urgent write ends
the wait at once."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from live_support import make_result
from scorewatch.live import SqliteSink

pytestmark = pytest.mark.integration


class CountingSink(SqliteSink):
    """The real sink, counting the transactions its writer thread commits."""

    def __init__(self, path: Path, **options: Any) -> None:
        self.transactions = 0
        super().__init__(path, **options)

    def _store(self, rows: list[tuple[Any, ...]]) -> None:
        super()._store(rows)
        self.transactions += 1


def _ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute('SELECT "id" FROM mastra_scorers ORDER BY "id"')]


async def _write_apart(sink: SqliteSink, count: int, pause: float) -> None:
    writes = []
    for i in range(count):
        writes.append(asyncio.ensure_future(sink.write([make_result(f"run-{i:02d}")])))
        await asyncio.sleep(pause)
    await asyncio.gather(*writes)


@pytest.mark.parametrize("linger", [0.0, 0.2])
async def test_rows_arriving_apart_share_a_transaction_with_a_linger(
    tmp_path: Path, linger: float
) -> None:
    sink = CountingSink(tmp_path / "scores.db", linger=linger)
    await _write_apart(sink, 10, 0.005)
    await sink.aclose()
    assert _ids(tmp_path / "scores.db") == [f"run-{i:02d}" for i in range(10)]
    if linger:
        assert sink.transactions <= 2  # 10 rows 5 ms apart, within one 200 ms wait
    else:
        assert sink.transactions >= 5  # each row as it comes (some may meet in the queue)


async def test_closing_mid_linger_stores_every_queued_row_once(tmp_path: Path) -> None:
    sink = CountingSink(tmp_path / "scores.db", linger=30.0)
    writes = [asyncio.ensure_future(sink.write([make_result(f"run-{i}")])) for i in range(5)]
    await asyncio.sleep(0.05)  # the writer now waits for more
    assert not any(write.done() for write in writes)
    await asyncio.wait_for(sink.aclose(), 10)  # ends the wait: far sooner than the linger
    await asyncio.gather(*writes)
    assert _ids(tmp_path / "scores.db") == [f"run-{i}" for i in range(5)]
    assert sink.transactions == 1
    with pytest.raises(RuntimeError, match="closed"):
        await sink.write([make_result("late")])


def test_writes_from_two_loops_in_one_batch_are_each_settled_on_their_own_loop(
    tmp_path: Path,
) -> None:
    # One transaction takes the rows of both loops; each writer is answered on its own loop
    # (the batch's futures are settled with one hand-off per loop).
    sink = CountingSink(tmp_path / "scores.db", linger=0.5)
    answered: dict[str, list[bool]] = {}

    def writer(name: str) -> None:
        async def write() -> None:
            loop = asyncio.get_running_loop()
            seen = []

            async def one(i: int) -> None:
                await sink.write([make_result(f"{name}-{i}")])
                seen.append(asyncio.get_running_loop() is loop)

            await asyncio.gather(*(one(i) for i in range(3)))
            answered[name] = seen

        asyncio.run(write())

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    sink.close(10)
    assert answered == {"a": [True] * 3, "b": [True] * 3}
    assert _ids(tmp_path / "scores.db") == [f"{n}-{i}" for n in "ab" for i in range(3)]
    assert sink.transactions == 1


def _then(acknowledged: list[str], name: str, done: threading.Event | None = None) -> Any:
    def then(error: BaseException | None) -> None:
        acknowledged.append(name if error is None else f"{name}: {error!r}")
        if done is not None:
            done.set()

    return then


def test_an_urgent_write_ends_the_linger_with_what_waits(tmp_path: Path) -> None:
    # Rows nobody waits for linger (30 s here); a write somebody waits for is stored at once,
    # together with them, in one transaction.
    sink = CountingSink(tmp_path / "scores.db", linger=30.0)
    acknowledged: list[str] = []
    for i in range(3):
        sink.write_then([make_result(f"run-{i}")], _then(acknowledged, f"run-{i}"))
    time.sleep(0.1)  # the writer now waits for more
    assert acknowledged == []
    done = threading.Event()
    sink.write_then([make_result("waited")], _then(acknowledged, "waited", done), urgent=True)
    assert done.wait(5)  # far sooner than the linger
    assert acknowledged == ["run-0", "run-1", "run-2", "waited"]
    assert sink.transactions == 1
    sink.close(10)
    assert _ids(tmp_path / "scores.db") == ["run-0", "run-1", "run-2", "waited"]


@pytest.mark.parametrize("seed", range(4))
def test_concurrent_writers_with_urgent_writes_each_row_stored_and_acknowledged_once(
    tmp_path: Path, seed: int
) -> None:
    # Four threads write 50 rows each, some urgent, at random moments, against a writer that
    # lingers: whatever the interleaving of the urgent flag with the writer's wait, every row
    # is stored once and acknowledged once, and no urgent write waits out the linger.
    sink = CountingSink(tmp_path / "scores.db", linger=30.0)
    acknowledged: list[str] = []
    urgent_done: list[threading.Event] = []

    def writer(name: str) -> None:
        chance = random.Random(f"{seed}-{name}")
        for i in range(50):
            row = f"{name}-{i:02d}"
            urgent = chance.random() < 0.2 or i == 49  # each writer's last write is urgent
            done = threading.Event()
            if urgent:
                urgent_done.append(done)
            sink.write_then([make_result(row)], _then(acknowledged, row, done), urgent=urgent)
            if chance.random() < 0.3:
                time.sleep(chance.random() / 1000)

    threads = [threading.Thread(target=writer, args=(name,)) for name in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    started = time.monotonic()
    for done in urgent_done:
        assert done.wait(5)
    assert time.monotonic() - started < 5  # none of them waited for the 30 s linger
    expected = sorted(f"{name}-{i:02d}" for name in "abcd" for i in range(50))
    assert sorted(acknowledged) == expected  # each acknowledged once, and stored
    sink.close(10)
    assert _ids(tmp_path / "scores.db") == expected
