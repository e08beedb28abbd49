"""`scorewatch rescore` (issue 33, part 5): stored runs judged again by a new scorer version,
through the command line, against real SQLite and PostgreSQL stores and a loopback judge. The
new rows stand beside the unchanged old ones; filters pick the runs; a rerun (after a kill too)
skips what this version scored; a judge failure is a failed run and a failed row, never a score;
redacted content is said to be redacted."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.cli_scorers import judged_scorer, judged_scorer_v2

from cli_support import PYTHONPATH, ROOT, scorewatch
from scorewatch.live import LiveScoring
from scorewatch.sinks import ScoreSink, SqliteSink
from scorewatch.testing.batch_server import BatchStandInServer
from scorewatch.testing.judge_server import HttpError, LoopbackJudgeServer, Reply

pytestmark = pytest.mark.e2e

V2 = "tests.cli_scorers:judged_scorer_v2"


def judge_script(body: dict[str, Any]) -> Reply | HttpError:
    """0.25 from the first version's instructions, 0.75 from the second's; a 400 for an output
    that says `boom` (a judge that refuses the call for good)."""
    text = " ".join(str(message.get("content")) for message in body["messages"])
    if "boom" in text:
        return HttpError(400, "the judge refuses this call", error_type="invalid_request_error")
    if "Explain" in body["messages"][-1]["content"]:
        return Reply(text="because")
    return Reply(text='{"score": 0.75}' if "strictly" in text else '{"score": 0.25}')


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(judge_script) as server:
        monkeypatch.setenv("SCOREWATCH_TEST_API_BASE", server.base_url)
        yield server


CALLS: list[dict[str, Any]] = [
    {
        "input": "When do refunds arrive?",
        "output": "within 5 days",
        "target": "support-bot",
        "run_id": "r1",
        "ground_truth": "5 days",
        "request_context": {"tenant": "acme"},
        "metadata": {"channel": "web"},
    },
    {"input": "Can I pay by card?", "output": "yes", "target": "support-bot", "run_id": "r2"},
    {"input": "Invoice copy?", "output": "sent", "target": "billing-bot", "run_id": "r3"},
]


async def seed(sinks: Sequence[ScoreSink], calls: Sequence[dict[str, Any]], **live: Any) -> None:
    """Live traffic scored by the first version, stored in `sinks`."""
    scoring = LiveScoring({"judged": judged_scorer()}, sinks=sinks, drain_on_exit=False, **live)
    for call in calls:
        scoring.submit(**call)
    await scoring.aclose()


def rescore(store: str, *args: str) -> subprocess.CompletedProcess[str]:
    return scorewatch("rescore", "--store", store, "--scorer", V2, *args)  # type: ignore[no-any-return]


def rows_of(db: Path) -> list[dict[str, Any]]:
    return SqliteSink(db).query(limit=1000)


def by_version(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["scorerVersion"], []).append(row)
    return found


def versions() -> tuple[str, str]:
    return judged_scorer().version_fingerprint, judged_scorer_v2().version_fingerprint


async def test_new_rows_beside_unchanged_old_ones_then_a_rerun_skips(
    tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    db = tmp_path / "scores.db"
    await seed([SqliteSink(db)], CALLS)
    v1, v2 = versions()
    assert v1 != v2
    old = {row["id"]: row for row in rows_of(db)}
    assert len(old) == 3 and {row["score"] for row in old.values()} == {0.25}
    judge.clear_requests()

    done = rescore(str(db))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read 3 row(s): 3 run(s) selected, 0 already scored" in done.stdout
    assert "scored 3, failed 0" in done.stdout and "wrote 3 row(s)" in done.stdout
    assert judge.request_count == 6  # two steps per run
    rows = rows_of(db)
    assert {row["id"]: row for row in rows if row["id"] in old} == old  # untouched
    new = by_version(rows)[v2]
    assert len(new) == 3 and {row["score"] for row in new} == {0.75}
    for row in new:
        origin = old[row["metadata"]["rescoredFrom"]["id"]]
        assert row["id"] == f"rescore-{v2}-{origin['id']}"
        assert row["metadata"]["rescoredFrom"]["scorerVersion"] == v1
        assert row["metadata"]["rescoredFrom"]["createdAt"] == origin["createdAt"]
        assert row["metadata"]["rescoredFrom"]["redacted"] is False
        for column in ("input", "output", "entityId", "traceId", "spanId", "requestContext"):
            assert row[column] == origin[column], column
        assert row["source"] == origin["source"] == "LIVE"
        kept = {k: v for k, v in row["metadata"].items() if k != "rescoredFrom"}
        assert kept == origin["metadata"]  # ground truth, agent run id, the call's metadata
    # The judge read the stored call.
    prompts = [r.messages[-1]["content"] for r in judge.requests if "Rate:" in str(r.messages)]
    assert sorted(prompts) == ["Rate: sent", "Rate: within 5 days", "Rate: yes"]

    judge.clear_requests()
    again = rescore(str(db))
    assert again.returncode == 0, again.stderr
    assert "3 already scored by this version" in again.stdout and "0 to score" in again.stdout
    assert judge.request_count == 0 and len(rows_of(db)) == 6

    forced = rescore(str(db), "--force", "--format", "json")
    assert forced.returncode == 0, forced.stderr
    assert judge.request_count == 6 and len(rows_of(db)) == 6  # this version's rows replaced
    assert {row["id"]: row for row in rows_of(db) if row["id"] in old} == old


async def test_filters_pick_the_runs(tmp_path: Path, judge: LoopbackJudgeServer) -> None:
    db = tmp_path / "scores.db"
    await seed([SqliteSink(db)], CALLS[:2])
    await asyncio.sleep(0.05)
    middle = datetime.now(UTC)
    await asyncio.sleep(0.05)
    await seed([SqliteSink(db)], CALLS[2:])
    _, v2 = versions()

    def rescored() -> set[str]:
        return {row["metadata"]["agentRunId"] for row in by_version(rows_of(db)).get(v2, [])}

    assert rescore(str(db), "--target", "billing-bot").returncode == 0
    assert rescored() == {"r3"}
    assert rescore(str(db), "--until", middle.isoformat(), "--limit", "1").returncode == 0
    assert len(rescored()) == 2  # the newer of the two runs before `middle`
    done = rescore(str(db), "--since", middle.isoformat())
    assert "1 already scored by this version" in done.stdout and "0 to score" in done.stdout
    done = rescore(str(db), "--until", middle.isoformat())
    assert "1 already scored by this version" in done.stdout and "1 to score" in done.stdout
    assert rescored() == {"r1", "r2", "r3"}


async def test_estimate_calls_no_judge(tmp_path: Path, judge: LoopbackJudgeServer) -> None:
    db = tmp_path / "scores.db"
    await seed([SqliteSink(db)], CALLS)
    judge.clear_requests()
    done = rescore(str(db), "--estimate", "--model", "openai/gpt-4o-mini")
    assert done.returncode == 0, done.stderr
    assert "3 to score" in done.stdout
    assert "estimate for 3 items; no judge was called" in done.stdout
    assert "prices: litellm" in done.stdout
    assert judge.request_count == 0 and len(rows_of(db)) == 3


async def test_a_judge_failure_is_a_failed_run_and_row_then_retried(
    tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    db = tmp_path / "scores.db"
    await seed([SqliteSink(db)], [*CALLS[:2], {**CALLS[2], "output": "boom"}])
    _, v2 = versions()
    done = rescore(str(db))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "scored 2, failed 1" in done.stdout and "1 failed run(s)" in done.stdout
    assert "rejected the request as invalid (HTTP 400)" in done.stdout
    new = by_version(rows_of(db))[v2]
    failed = [row for row in new if row["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["score"] is None and failed[0]["error"]
    # The failed run is tried again by the next run; the scored ones are not.
    judge.clear_requests()
    again = rescore(str(db), "--allow-failures")
    assert again.returncode == 0 and "2 already scored" in again.stdout
    assert "1 to score" in again.stdout and judge.request_count == 1  # refused again


async def test_redacted_runs_are_said_to_be_redacted(
    tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    db = tmp_path / "scores.db"
    call = {"input": "I am ada@example.com", "output": "Mail sent to ada@example.com"}
    await seed([SqliteSink(db)], [call, CALLS[1]], privacy={"redact": ["email"]})
    judge.clear_requests()
    done = rescore(str(db))
    assert done.returncode == 0, done.stderr
    assert "1 run(s) were stored redacted" in done.stdout and "<EMAIL_1>" in done.stdout
    assert any("Rate: Mail sent to <EMAIL_1>" in str(r.messages) for r in judge.requests)
    assert "ada@example.com" not in str([r.messages for r in judge.requests])
    _, v2 = versions()
    marked = [r for r in by_version(rows_of(db))[v2] if r["metadata"]["rescoredFrom"]["redacted"]]
    assert len(marked) == 1
    skipped = rescore(str(db), "--skip-redacted", "--force")
    assert "1 redacted skipped, 1 to score" in skipped.stdout


def test_a_killed_rescore_continues_without_duplicates(tmp_path: Path) -> None:
    db = tmp_path / "scores.db"
    calls = [{"input": f"q{n}", "output": f"answer {n}", "run_id": f"k{n}"} for n in range(12)]
    slow = lambda body: Reply(text='{"score": 0.5}', delay=0.15)  # noqa: E731
    with LoopbackJudgeServer(slow) as server:
        os.environ["SCOREWATCH_TEST_API_BASE"] = server.base_url
        try:
            asyncio.run(seed([SqliteSink(db)], calls))
            _, v2 = versions()
            env = {**os.environ, "PYTHONPATH": PYTHONPATH}
            process = subprocess.Popen(
                [sys.executable, "-m", "scorewatch", "rescore", "--store", str(db),
                 "--scorer", V2, "--concurrency", "1"],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
            _wait_for(lambda: _count(db, v2) >= 3, process)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            first = _count(db, v2)
            assert 3 <= first < 12
            server.clear_requests()
            done = rescore(str(db))
            assert done.returncode == 0, done.stdout + done.stderr
            assert f"{first} already scored by this version" in done.stdout
            assert server.request_count == 2 * (12 - first)
        finally:
            del os.environ["SCOREWATCH_TEST_API_BASE"]
    rows = by_version(rows_of(db))[v2]
    origins = [row["metadata"]["rescoredFrom"]["id"] for row in rows]
    assert len(origins) == len(set(origins)) == 12


def _count(db: Path, version: str) -> int:
    with sqlite3.connect(db) as conn:
        found = conn.execute(
            'SELECT count(*) FROM mastra_scorers WHERE "scorerVersion" = ?', (version,)
        ).fetchone()
    return int(found[0])


def _wait_for(condition: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"rescore ended or stalled: {process.communicate()}")
        time.sleep(0.02)


async def test_postgresql_rows_beside_old_ones(schema: str, judge: LoopbackJudgeServer) -> None:
    from scale_support import PG_DSN
    from scorewatch.sinks.postgres import PostgresSink

    await seed([PostgresSink(PG_DSN, schema=schema)], CALLS)
    v1, v2 = versions()

    async def stored() -> list[dict[str, Any]]:
        reader = PostgresSink(PG_DSN, schema=schema)
        try:
            return await reader.aquery(limit=1000)
        finally:
            await reader.aclose()

    old = {row["id"]: row for row in await stored()}
    done = rescore(PG_DSN, "--schema", schema, "--target", "support-bot")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 to score" in done.stdout and "wrote 2 row(s)" in done.stdout
    rows = await stored()
    assert {row["id"]: row for row in rows if row["id"] in old} == old
    new = by_version(rows)[v2]
    assert {row["metadata"]["agentRunId"] for row in new} == {"r1", "r2"}
    assert {row["score"] for row in new} == {0.75}
    assert all(row["metadata"]["rescoredFrom"]["scorerVersion"] == v1 for row in new)
    first = next(row for row in new if row["metadata"]["agentRunId"] == "r1")
    assert first["metadata"]["groundTruth"] == "5 days"
    assert first["requestContext"] == {"tenant": "acme"}
    judge.clear_requests()
    again = rescore(PG_DSN, "--schema", schema, "--format", "json")
    assert again.returncode == 0, again.stderr
    assert '"skipped_already_scored": 2' in again.stdout and '"to_score": 1' in again.stdout
    assert judge.request_count == 2 and len(await stored()) == 6


async def test_batch_rescore_sends_every_judge_call_through_the_batch_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `rescore --batch` reuses eval's batch runner: the new version's judge calls go out as one
    # batch per step (rate, explain), none as a direct chat call, and the rows it writes are
    # those of a direct re-score, at the batch price.
    db = tmp_path / "scores.db"
    with BatchStandInServer(judge_script) as server:
        monkeypatch.setenv("SCOREWATCH_TEST_API_BASE", server.base_url)
        await seed([SqliteSink(db)], CALLS)
        seeded_requests = server.request_count
        state = tmp_path / "rescore.batch-state.json"
        done = rescore(str(db), "--batch", "--batch-poll", "0.1", "--batch-state", str(state))
        assert done.returncode == 0, done.stdout + done.stderr
        batches = list(server.batches.values())
        paths = [r.path for r in server.requests[seeded_requests:]]
    assert "scored 3, failed 0" in done.stdout and "wrote 3 row(s)" in done.stdout
    assert not any(path.endswith("/chat/completions") for path in paths), paths
    assert [b["request_counts"]["total"] for b in batches] == [3, 3]
    assert not state.exists()  # removed once the run finished
    new = by_version(rows_of(db))[versions()[1]]
    assert len(new) == 3 and {row["score"] for row in new} == {0.75}
    # Each judge call of each new row was answered through the Batch API.
    transports = {
        execution["judgeTransport"]
        for row in new
        for step in row["judge"].values()
        for execution in step["executions"]
    }
    assert transports == {"openai_batch"}
