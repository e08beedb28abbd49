"""The bounded queue: exact accounting of every decision, drain and close, loop shutdowns."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from live_support import (
    Collected,
    GatedJudge,
    ThreadGatedJudge,
    accepted_runs_accounted,
    answering_judge,
    constant_scorer,
    judged_scorer,
)
from scorewatch.judge import JudgeRequest
from scorewatch.live import JsonlSink, LiveScoring, SqliteSink
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.integration

SRC = str(Path(__file__).resolve().parents[2] / "src")
TESTS = str(Path(__file__).resolve().parents[1])


async def test_a_burst_beyond_max_queue_drops_and_counts_exactly_the_overflow() -> None:
    judge = GatedJudge()
    collected = Collected()
    live = LiveScoring(
        {"judged": judged_scorer(judge)},
        max_queue=100,
        max_concurrency=4,
        sinks=[collected.sink()],
        drain_on_exit=False,
    )

    @live.watch(target="bot")
    def answer(question: str) -> str:
        return question

    # 10,000 calls without yielding to the loop: nothing starts, the queue holds 100.
    outputs = [answer(str(i)) for i in range(10_000)]
    assert outputs == [str(i) for i in range(10_000)]
    stats = live.stats()
    assert stats["sampled"] == 100
    assert stats["dropped_queue_full"] == 9_900
    assert stats["queued"] == 100
    await asyncio.sleep(0.01)
    assert judge.waiting == 4
    judge.open()
    assert await live.drain(30)
    stats = live.stats()
    assert stats["scored"] == 100 and stats["queued"] == 0 and stats["in_flight"] == 0
    assert len(collected.results) == 100
    assert {r.call.input for r in collected.results} == {str(i) for i in range(100)}
    await live.aclose()


def test_a_threaded_burst_is_accounted_exactly() -> None:
    judge = ThreadGatedJudge()
    collected = Collected()
    live = LiveScoring(
        {"judged": judged_scorer(judge)},
        max_queue=100,
        max_concurrency=4,
        sinks=[collected.sink()],
        drain_on_exit=False,
    )

    def burst(offset: int) -> None:
        for i in range(2_500):
            live.submit(input=offset + i, output="a")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(burst, range(0, 10_000, 2_500)))
    stats = live.stats()
    assert stats["sampled"] + stats["dropped_queue_full"] == 10_000
    assert stats["sampled"] <= 104  # the queue bound plus the runs in flight
    assert accepted_runs_accounted(stats)
    judge.gate.set()
    assert live.drain_sync(30)
    stats = live.stats()
    assert stats["scored"] == stats["sampled"] == len(collected.results)
    live.close()


async def test_drain_and_close_lose_nothing_accepted(tmp_path: Path) -> None:
    collected = Collected()
    sqlite_sink = SqliteSink(tmp_path / "scores.db")
    jsonl_sink = JsonlSink(tmp_path / "scores.jsonl")
    judge = ScriptedJudge(lambda request: '{"score": 0.5}', delay=0.001)
    live = LiveScoring(
        {"judged": judged_scorer(judge), "constant": constant_scorer()},
        max_concurrency=8,
        sinks=[sqlite_sink, jsonl_sink, collected.sink()],
        drain_on_exit=False,
    )

    @live.watch(target="bot")
    async def answer(question: str) -> str:
        await asyncio.sleep(0)
        return question

    await asyncio.gather(*(answer(str(i)) for i in range(150)))
    await live.aclose()
    stats = live.stats()
    assert stats["sampled"] == stats["scored"] == 300
    assert stats["queued"] == stats["in_flight"] == stats["dropped_shutdown"] == 0
    assert len(sqlite_sink.query(limit=1000)) == 300
    assert len((tmp_path / "scores.jsonl").read_text().splitlines()) == 300
    assert len(set(collected.ids())) == 300
    # After close, new calls are refused and counted, never silently dropped.
    assert await answer("late") == "late"
    assert live.stats()["dropped_shutdown"] == 2


async def test_close_timeout_counts_unfinished_runs_as_dropped_at_shutdown() -> None:
    judge = GatedJudge()  # never opened
    live = LiveScoring({"judged": judged_scorer(judge)}, max_concurrency=2, drain_on_exit=False)
    for i in range(5):
        live.submit(output=str(i))
    await asyncio.sleep(0.01)
    assert judge.waiting == 2
    await live.aclose(timeout=0.05)
    stats = live.stats()
    assert stats["sampled"] == 5
    assert stats["dropped_shutdown"] == 5
    assert stats["queued"] == stats["in_flight"] == stats["scored"] == 0
    await asyncio.sleep(0.01)
    assert judge.waiting == 0  # the abandoned judge calls were cancelled


@pytest.mark.parametrize("started", [True, False], ids=["runs-started", "cancelled-before-start"])
def test_runs_survive_the_end_of_the_callers_event_loop(started: bool) -> None:
    """asyncio.run() returns while runs wait or run on its loop: they move to scorewatch's
    background loop and finish there, under the same run ids. Without a yield, asyncio.run
    may cancel the run tasks before their first step."""
    threads: list[str] = []

    async def reply(request: JudgeRequest) -> str:
        threads.append(threading.current_thread().name)
        if threading.current_thread().name != "scorewatch-loop":
            await asyncio.Event().wait()  # blocks until its loop is torn down
        return '{"score": 1}'

    collected = Collected()
    live = LiveScoring(
        {"judged": judged_scorer(ScriptedJudge(reply))},
        max_concurrency=2,
        sinks=[collected.sink()],
        drain_on_exit=False,
    )

    @live.watch(target="bot")
    async def answer(question: str) -> str:
        return question

    async def main() -> None:
        for i in range(6):
            await answer(str(i))
        if started:
            await asyncio.sleep(0.01)  # two runs start and block on this loop

    asyncio.run(main())
    assert live.drain_sync(20)
    stats = live.stats()
    assert stats["scored"] == 6 and stats["dropped_shutdown"] == 0
    assert sorted(r.call.input for r in collected.results) == [str(i) for i in range(6)]
    assert len(set(collected.ids())) == 6
    assert threads.count("scorewatch-loop") == 6
    live.close()


def test_concurrent_threads_and_loops_keep_exact_accounts() -> None:
    collected = Collected()
    live = LiveScoring(
        {"judged": judged_scorer(answering_judge())},
        max_queue=50,
        max_concurrency=3,
        sinks=[collected.sink()],
        drain_on_exit=False,
    )

    @live.watch(target="bot")
    async def answer(question: str) -> str:
        return question

    def worker(offset: int) -> None:
        async def calls() -> None:
            for i in range(200):
                await answer(str(offset + i))
                if i % 20 == 0:
                    await asyncio.sleep(0)
            await live.drain(20)

        asyncio.run(calls())

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(worker, range(0, 800, 200)))
    assert live.drain_sync(20)
    stats = live.stats()
    assert stats["sampled"] + stats["dropped_queue_full"] == 800
    assert stats["scored"] == stats["sampled"] == len(collected.results)
    assert stats["queued"] == stats["in_flight"] == 0
    live.close()


def _child(script: str, tmp_path: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([SRC, TESTS]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    path = tmp_path / "child.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.Popen(
        [sys.executable, str(path), str(tmp_path / "scores.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute("SELECT count(*) FROM mastra_scorers").fetchone()
    return int(count)


def test_interpreter_exit_drains_what_was_accepted(tmp_path: Path) -> None:
    child = _child(
        """
        import sys
        from live_support import judged_scorer
        from scorewatch.live import LiveScoring, SqliteSink
        from scorewatch.testing import ScriptedJudge

        judge = ScriptedJudge(lambda request: '{"score": 0.5}', delay=0.01)
        live = LiveScoring({"judged": judged_scorer(judge)}, max_concurrency=4,
                           sinks=[SqliteSink(sys.argv[1])])
        for i in range(40):
            live.submit(input=i, output="answer")
        print("submitted", live.stats()["scored"], flush=True)
        """,
        tmp_path,
    )
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    submitted_scored = int(out.split()[1])
    assert submitted_scored < 40  # the process was about to exit with runs pending
    assert _rows(tmp_path / "scores.db") == 40


def test_sigterm_drains_then_terminates_as_before(tmp_path: Path) -> None:
    child = _child(
        """
        import sys, time
        from live_support import judged_scorer
        from scorewatch.live import LiveScoring, SqliteSink
        from scorewatch.testing import ScriptedJudge

        judge = ScriptedJudge(lambda request: '{"score": 0.5}', delay=0.02)
        live = LiveScoring({"judged": judged_scorer(judge)}, max_concurrency=2,
                           sinks=[SqliteSink(sys.argv[1])], handle_sigterm=True)
        for i in range(30):
            live.submit(input=i, output="answer")
        print("ready", flush=True)
        time.sleep(60)
        print("not reached", flush=True)
        """,
        tmp_path,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGTERM, err
    assert "not reached" not in out
    assert _rows(tmp_path / "scores.db") == 30


def test_sigterm_chains_the_previous_handler(tmp_path: Path) -> None:
    child = _child(
        """
        import signal, sys, time
        from live_support import constant_scorer
        from scorewatch.live import LiveScoring, SqliteSink

        stopped = []
        signal.signal(signal.SIGTERM, lambda signum, frame: stopped.append(signum))
        live = LiveScoring({"c": constant_scorer()}, sinks=[SqliteSink(sys.argv[1])],
                           handle_sigterm=True)
        live.submit(output="x")
        print("ready", flush=True)
        while not stopped:
            time.sleep(0.01)
        print("previous handler ran", live.stats()["scored"], flush=True)
        """,
        tmp_path,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert "previous handler ran 1" in out


def test_stats_shape() -> None:
    live = LiveScoring({"c": constant_scorer()}, drain_on_exit=False)
    assert set(live.stats()) == {
        "sampled",
        "not_sampled",
        "skipped_budget",
        "filtered",
        "dropped_queue_full",
        "dropped_shutdown",
        "scored",
        "not_scorable",  # issue 16 item 3: counted apart from scores and failures
        "failed",
        "queued",
        "in_flight",
    }
    live.close()


def test_close_finishes_runs_left_on_a_stopped_loop() -> None:
    """A loop driven by run_until_complete and left stopped (not closed) holds runs that can
    make no progress: a blocking close moves them to the background loop."""

    async def reply(request: JudgeRequest) -> str:
        if threading.current_thread().name != "scorewatch-loop":
            await asyncio.Event().wait()
        return '{"score": 1}'

    collected = Collected()
    live = LiveScoring(
        {"judged": judged_scorer(ScriptedJudge(reply))},
        max_concurrency=2,
        sinks=[collected.sink()],
        drain_on_exit=False,
    )

    async def calls() -> None:
        for i in range(5):
            live.submit(output=str(i))
        await asyncio.sleep(0.01)

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(calls())
        assert live.stats()["in_flight"] == 2
        live.close(timeout=20)
        stats = live.stats()
        assert stats["scored"] == 5 and stats["dropped_shutdown"] == 0
        assert len(set(collected.ids())) == 5
    finally:
        loop.close()


def test_sigterm_inside_a_running_event_loop_moves_its_runs_to_the_background(
    tmp_path: Path,
) -> None:
    child = _child(
        """
        import asyncio, os, signal, sys
        from live_support import judged_scorer
        from scorewatch.live import LiveScoring, SqliteSink
        from scorewatch.testing import ScriptedJudge

        def report(signum, frame):
            print("stats", live.stats()["scored"], live.stats()["dropped_shutdown"], flush=True)
            os._exit(0)

        signal.signal(signal.SIGTERM, report)
        judge = ScriptedJudge(lambda request: '{"score": 0.5}', delay=0.05)
        live = LiveScoring({"judged": judged_scorer(judge)}, max_concurrency=2,
                           sinks=[SqliteSink(sys.argv[1])], handle_sigterm=True)

        async def main():
            for i in range(10):
                live.submit(input=i, output="answer")
            await asyncio.sleep(0.01)  # two runs are in flight on this loop
            print("ready", flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert "stats 10 0" in out
    assert _rows(tmp_path / "scores.db") == 10


async def test_a_cancelled_drain_leaves_the_queue_working() -> None:
    judge = GatedJudge()
    live = LiveScoring({"judged": judged_scorer(judge)}, drain_on_exit=False)
    live.submit(output="x")
    waiting = asyncio.ensure_future(live.drain(None))
    await asyncio.sleep(0.01)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert waiting.cancelled()
    assert not await live.drain(0.01)  # still blocked: a drain with a deadline says so
    judge.open()
    assert await live.drain(10)
    assert live.stats()["scored"] == 1
    await live.aclose()


async def test_a_second_close_waits_for_the_first_to_drain() -> None:
    judge = GatedJudge()
    live = LiveScoring({"judged": judged_scorer(judge)}, drain_on_exit=False)
    for i in range(3):
        live.submit(output=str(i))
    first = asyncio.ensure_future(live.aclose(timeout=30))
    second = asyncio.ensure_future(live.aclose(timeout=30))
    await asyncio.sleep(0.01)
    assert not first.done() and not second.done()
    judge.open()
    await asyncio.gather(first, second)
    assert live.stats()["scored"] == 3
