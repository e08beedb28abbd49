"""A SQLite sink with a `linger` stores rows that arrive apart in one transaction, stores each
row once, and still stores everything queued when it is closed mid-wait."""

from __future__ import annotations

import asyncio
import sqlite3
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
    import threading

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
