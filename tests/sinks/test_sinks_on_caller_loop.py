"""A SQLite sink made `on_caller_loop` (serve's) stores a loop's `write_then` batches on that
loop, at the end of the linger or at once for an urgent write, with no writer thread involved;
writes from elsewhere still go to the thread, the two never store at once, and closing stores
what still waits on a loop, each row once."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from live_support import make_result
from scorewatch.live import SqliteSink

pytestmark = pytest.mark.integration


class WatchedSink(SqliteSink):
    """The real sink, recording the thread of each transaction it commits and its rows."""

    def __init__(self, path: Path, **options: Any) -> None:
        self.transactions: list[tuple[str, int]] = []
        self._storing_now = threading.Lock()
        super().__init__(path, **options)

    def _store(self, rows: list[tuple[Any, ...]]) -> None:
        # Two stores at once would fail here (and in SQLite: a transaction within another).
        assert self._storing_now.acquire(blocking=False), "two batches stored at once"
        try:
            super()._store(rows)
        finally:
            self._storing_now.release()
        self.transactions.append((threading.current_thread().name, len(rows)))


def _ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute('SELECT "id" FROM mastra_scorers ORDER BY "id"')]


def _then(acknowledged: list[tuple[str, str]], name: str, done: Any = None) -> Any:
    def then(error: BaseException | None) -> None:
        where = threading.current_thread().name
        acknowledged.append((name if error is None else f"{name}: {error!r}", where))
        if done is not None:
            done()

    return then


def test_a_loops_writes_apart_are_stored_by_that_loop_in_one_transaction(
    tmp_path: Path,
) -> None:
    sink = WatchedSink(tmp_path / "scores.db", linger=0.2, on_caller_loop=True)
    acknowledged: list[tuple[str, str]] = []

    async def write_apart() -> None:
        stored = asyncio.Event()
        for i in range(5):
            last = i == 4
            sink.write_then(
                [make_result(f"run-{i}")],
                _then(acknowledged, f"run-{i}", stored.set if last else None),
            )
            await asyncio.sleep(0.005)
        assert acknowledged == []  # the batch waits out the linger
        await asyncio.wait_for(stored.wait(), 5)

    thread = threading.Thread(target=asyncio.run, args=(write_apart(),), name="the-loop")
    thread.start()
    thread.join(10)
    sink.close(10)
    assert acknowledged == [(f"run-{i}", "the-loop") for i in range(5)]
    assert sink.transactions == [("the-loop", 5)]  # no writer thread took part
    assert _ids(tmp_path / "scores.db") == [f"run-{i}" for i in range(5)]


async def test_an_urgent_write_on_the_loop_ends_the_linger_with_what_waits(
    tmp_path: Path,
) -> None:
    sink = WatchedSink(tmp_path / "scores.db", linger=30.0, on_caller_loop=True)
    acknowledged: list[tuple[str, str]] = []
    for i in range(3):
        sink.write_then([make_result(f"run-{i}")], _then(acknowledged, f"run-{i}"))
    await asyncio.sleep(0.05)
    assert acknowledged == []
    waited = asyncio.Event()
    sink.write_then([make_result("waited")], _then(acknowledged, "waited", waited.set), urgent=True)
    await asyncio.wait_for(waited.wait(), 5)  # far sooner than the linger
    here = threading.current_thread().name
    assert acknowledged == [(name, here) for name in ("run-0", "run-1", "run-2", "waited")]
    assert sink.transactions == [(here, 4)]
    # The first batch's timer is gone with it: a later write starts a batch of its own.
    later = asyncio.Event()
    sink.write_then([make_result("later")], _then(acknowledged, "later", later.set), urgent=True)
    await asyncio.wait_for(later.wait(), 5)
    assert sink.transactions == [(here, 4), (here, 1)]
    await sink.aclose()


def test_writes_waiting_on_a_stopped_loop_are_stored_once_by_close(tmp_path: Path) -> None:
    # The loop ends before its batch's turn (a 30 s linger): closing the sink stores the rows
    # on the writer thread and acknowledges each once there.
    sink = WatchedSink(tmp_path / "scores.db", linger=30.0, on_caller_loop=True)
    acknowledged: list[tuple[str, str]] = []

    async def write() -> None:
        for i in range(3):
            sink.write_then([make_result(f"run-{i}")], _then(acknowledged, f"run-{i}"))

    asyncio.run(write())
    assert acknowledged == []
    sink.close(10)
    assert acknowledged == [(f"run-{i}", "scorewatch-sqlite-sink") for i in range(3)]
    assert sink.transactions == [("scorewatch-sqlite-sink", 3)]
    assert _ids(tmp_path / "scores.db") == ["run-0", "run-1", "run-2"]
    with pytest.raises(RuntimeError, match="closed"):
        sink.write_then([make_result("late")], _then(acknowledged, "late"))


@pytest.mark.parametrize("on_caller_loop", [True, False])
def test_without_a_loop_or_the_option_the_writer_thread_stores(
    tmp_path: Path, on_caller_loop: bool
) -> None:
    sink = WatchedSink(tmp_path / "scores.db", linger=0.0, on_caller_loop=on_caller_loop)
    acknowledged: list[tuple[str, str]] = []
    done = threading.Event()

    def write() -> None:
        sink.write_then([make_result("run")], _then(acknowledged, "run", done.set))

    async def write_on_a_loop() -> None:
        write()

    if on_caller_loop:  # no running loop here: the thread's
        write()
    else:  # a loop, but the sink was not asked to store on it
        asyncio.run(write_on_a_loop())
    assert done.wait(5)
    sink.close(10)
    assert acknowledged == [("run", "scorewatch-sqlite-sink")]
    assert sink.transactions == [("scorewatch-sqlite-sink", 1)]


@pytest.mark.parametrize("seed", range(3))
def test_loops_and_the_thread_writing_at_once_store_every_row_once(
    tmp_path: Path, seed: int
) -> None:
    # Two loops store their own batches (some urgent) while a third thread's awaited writes go
    # to the writer thread, and the sink closes right after: never two transactions at once
    # (`WatchedSink` fails such a store), every row stored and acknowledged exactly once.
    sink = WatchedSink(tmp_path / "scores.db", linger=0.003, on_caller_loop=True)
    acknowledged: list[tuple[str, str]] = []
    failures: list[BaseException] = []

    async def on_loop(name: str) -> None:
        chance = random.Random(f"{seed}-{name}")
        left = asyncio.Event()
        count = [40]

        def one_done() -> None:
            count[0] -= 1
            if not count[0]:
                left.set()

        for i in range(40):
            row = f"{name}-{i:02d}"
            urgent = chance.random() < 0.2
            sink.write_then([make_result(row)], _then(acknowledged, row, one_done), urgent=urgent)
            if chance.random() < 0.5:
                await asyncio.sleep(chance.random() / 500)
        await asyncio.wait_for(left.wait(), 10)

    async def awaited(name: str) -> None:
        for i in range(40):
            row = f"{name}-{i:02d}"
            await sink.write([make_result(row)])
            acknowledged.append((row, "awaited"))

    def run(coro: Any) -> None:
        try:
            asyncio.run(coro)
        except BaseException as error:  # reported below, with the thread's name lost
            failures.append(error)

    threads = [
        threading.Thread(target=run, args=(on_loop("a"),)),
        threading.Thread(target=run, args=(on_loop("b"),)),
        threading.Thread(target=run, args=(awaited("c"),)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    sink.close(10)
    assert failures == []
    expected = sorted(f"{name}-{i:02d}" for name in "abc" for i in range(40))
    assert sorted(row for row, _where in acknowledged) == expected
    assert _ids(tmp_path / "scores.db") == expected
    assert sum(rows for _where, rows in sink.transactions) == len(expected)


@pytest.mark.parametrize("on_caller_loop", [True, False])
def test_a_batchs_acknowledged_writes_are_told_in_one_call_per_callback(
    tmp_path: Path, on_caller_loop: bool
) -> None:
    # `write_acknowledged` (the live engine's): each callback hears all its writes of a batch
    # at once, by token; one that raises is logged and another callback still hears its own.
    sink = WatchedSink(tmp_path / "scores.db", linger=30.0, on_caller_loop=on_caller_loop)
    calls: list[tuple[str, list[tuple[Any, BaseException | None]]]] = []

    def first(acknowledged: list[tuple[Any, BaseException | None]]) -> None:
        calls.append(("first", acknowledged))
        raise RuntimeError("the owner's bookkeeping failed")

    def second(acknowledged: list[tuple[Any, BaseException | None]]) -> None:
        calls.append(("second", acknowledged))

    async def write() -> None:
        for i in range(5):  # the last one urgent: it ends the linger with what waits
            callback = first if i % 2 else second
            sink.write_acknowledged([make_result(f"run-{i}")], callback, i, urgent=i == 4)
        while len(calls) < 2:  # noqa: ASYNC110 - the acknowledgement is a plain callback
            await asyncio.sleep(0.01)

    thread = threading.Thread(target=asyncio.run, args=(write(),), name="the-loop")
    thread.start()
    thread.join(10)
    sink.close(10)
    assert calls == [
        ("second", [(0, None), (2, None), (4, None)]),
        ("first", [(1, None), (3, None)]),
    ]
    assert [rows for _thread, rows in sink.transactions] == [5]  # one batch, two calls
    assert _ids(tmp_path / "scores.db") == [f"run-{i}" for i in range(5)]
