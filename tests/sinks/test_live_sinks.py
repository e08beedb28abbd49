"""Result sinks: reference-compatible SQLite rows, JSONL lines, callbacks, failures, crashes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import scorewatch as sw
from live_support import Collected, answering_judge, judged_scorer, make_result
from scorewatch.live import (
    CallbackSink,
    JsonlSink,
    LiveScoring,
    ScoreSink,
    SqliteSink,
)
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.integration

SRC = str(Path(__file__).resolve().parents[2] / "src")
TESTS = str(Path(__file__).resolve().parents[1])

# The reference system's score row: every field name it stores, in its spelling.
REFERENCE_FIELDS = {
    "id", "scorerId", "entityId", "runId", "input", "output", "additionalContext",
    "requestContext", "extractStepResult", "extractPrompt", "score", "analyzeStepResult",
    "analyzePrompt", "reason", "reasonPrompt", "scorer", "metadata", "source", "entity",
    "entityType", "structuredOutput", "traceId", "spanId", "resourceId", "threadId",
    "preprocessStepResult", "preprocessPrompt", "generateScorePrompt", "generateReasonPrompt",
    "createdAt", "updatedAt",
}  # fmt: skip

ANALYZE_SCHEMA = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
}


def four_step_scorer(judge: sw.JudgeModel) -> sw.Scorer:
    return (
        sw.create_scorer(
            id="faithful",
            description="claims in the answer",
            judge=sw.JudgeConfig(model=judge, instructions="Judge claims."),
        )
        .preprocess(lambda ctx: {"length": len(str(ctx.run.output))})
        .analyze(sw.PromptStep("find claims", lambda ctx: "claims?", output_schema=ANALYZE_SCHEMA))
        .generate_score(lambda ctx: len(ctx.results.analyze_step_result["claims"]) / 4)
        .generate_reason(sw.PromptStep("explain", lambda ctx: f"why {ctx.score}?"))
    )


async def test_sqlite_rows_are_reference_score_rows_plus_judge_records(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "scores.db")
    judge = ScriptedJudge(['{"claims": ["a", "b", "c"]}', "three claims hold"])
    live = LiveScoring({"f": four_step_scorer(judge)}, sinks=[sink], drain_on_exit=False)
    live.submit(
        input={"question": "q"},
        output="an answer",
        target="support-bot",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        request_context={"tenant": "acme"},
    )
    await live.aclose()
    (row,) = sink.query()
    assert set(row) >= REFERENCE_FIELDS
    assert (
        row["id"]
        == row["runId"]
        == ("scoring-faithful-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331")
    )
    assert row["scorerId"] == "faithful" and row["entityId"] == "support-bot"
    assert row["score"] == 0.75
    assert row["reason"] == "three claims hold"
    assert row["source"] == "LIVE" and row["entityType"] == "AGENT"
    assert row["scorer"] == {
        "id": "faithful",
        "name": "faithful",
        "description": "claims in the answer",
        "hasJudge": True,
    }
    assert row["entity"] == {"id": "support-bot", "name": "support-bot"}
    assert row["input"] == {"question": "q"} and row["output"] == "an answer"
    assert row["requestContext"] == {"tenant": "acme"}
    assert row["preprocessStepResult"] == {"length": 9}
    assert row["analyzeStepResult"] == {"claims": ["a", "b", "c"]}
    assert row["analyzePrompt"] == "claims?"
    assert row["generateReasonPrompt"] == "why 0.75?"
    assert row["traceId"] == "0af7651916cd43dd8448eb211c80319c"
    assert row["spanId"] == "b7ad6b7169203331"
    assert row["structuredOutput"] is False
    assert row["status"] == "success" and row["error"] is None and row["completedSteps"] == []
    assert set(row["judge"]) == {"analyze", "generateReason"}
    (execution,) = row["judge"]["analyze"]["executions"]
    assert execution["status"] == "success" and execution["attemptCount"] == 1
    assert execution["usage"]["inputTokens"] == 10
    assert datetime.fromisoformat(row["createdAt"]) <= datetime.now(UTC)
    with sqlite3.connect(tmp_path / "scores.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_failed_runs_are_stored_as_failures_never_as_scores(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "scores.db")
    jsonl = JsonlSink(tmp_path / "scores.jsonl")
    judge = ScriptedJudge(["this is not JSON", "still not JSON"])
    live = LiveScoring({"f": four_step_scorer(judge)}, sinks=[sink, jsonl], drain_on_exit=False)
    live.submit(input="q", output="a", target="bot", run_id="r1")
    await live.aclose()
    assert live.stats()["failed"] == 1 and live.stats()["scored"] == 0
    (row,) = sink.query(status="failed")
    assert row["score"] is None
    assert row["status"] == "failed"
    assert row["failedStep"] == "analyze"
    assert row["completedSteps"] == ["preprocess"]
    assert row["error"].startswith("Scorer Run Failed")
    assert row["errorCode"] == "STRUCTURED_OUTPUT_JSON_PARSE_FAILED"  # the cause, not the wrapper
    assert row["preprocessStepResult"] == {"length": 1}
    (failure,) = row["judge"]["analyze"]["executions"]
    assert failure["status"] == "failed" and failure["attemptCount"] == 2  # plus the fallback
    assert sink.query(status="success") == []
    (line,) = (tmp_path / "scores.jsonl").read_text().splitlines()
    assert json.loads(line)["score"] is None and json.loads(line)["failedStep"] == "analyze"


async def test_redelivery_is_idempotent_and_query_filters(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "scores.db")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    results = [
        make_result(f"run-{i}", target="a" if i % 2 else "b",
                    scorer_id="s1" if i < 6 else "s2", at=start + timedelta(minutes=i))
        for i in range(10)
    ]  # fmt: skip
    await sink.write(results[:5])
    await sink.write(results)  # the first five again
    await sink.write([make_result("run-0", score=0.9, at=start + timedelta(days=1))])
    assert len(sink.query(limit=100)) == 10
    (rewritten,) = [r for r in sink.query(limit=100) if r["id"] == "run-0"]
    assert rewritten["score"] == 0.9
    assert rewritten["createdAt"] == "2026-01-01T00:00:00.000Z"  # the first delivery's
    assert [r["id"] for r in sink.query(limit=3)] == ["run-9", "run-8", "run-7"]
    assert {r["entityId"] for r in sink.query(target="a", limit=100)} == {"a"}
    assert len(sink.query(target="a", limit=100)) == 5
    assert {r["id"] for r in sink.query(scorer="s2", limit=100)} == {
        "run-6", "run-7", "run-8", "run-9"
    }  # fmt: skip
    since = sink.query(since=start + timedelta(minutes=8), limit=100)
    assert {r["id"] for r in since} == {"run-8", "run-9"}
    assert {r["id"] for r in await sink.aquery(since="2026-01-01T00:08:00.000Z")} == {
        "run-8", "run-9"
    }  # fmt: skip
    await sink.aclose()


async def test_jsonl_appends_one_result_per_line(tmp_path: Path) -> None:
    path = tmp_path / "out" / "scores.jsonl"
    path.parent.mkdir()
    path.write_text('{"id": "older"}\n')
    sink = JsonlSink(path)
    await sink.write([make_result(f"run-{i}") for i in range(3)])
    await sink.write([make_result("run-3")])
    await sink.aclose()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["older", "run-0", "run-1", "run-2", "run-3"]
    assert lines[1]["source"] == "LIVE" and lines[1]["score"] == 0.5


async def test_a_failing_sink_is_counted_and_does_not_stop_the_others(tmp_path: Path) -> None:
    class FlakySink:
        name = "flaky"

        def __init__(self) -> None:
            self.calls = 0

        async def write(self, results: Any) -> None:
            self.calls += 1
            if self.calls % 2:
                raise ConnectionError("remote store down")

        async def aclose(self) -> None:
            return None

    flaky = FlakySink()
    assert isinstance(flaky, ScoreSink)
    collected = Collected()
    sqlite_sink = SqliteSink(tmp_path / "scores.db")
    live = LiveScoring(
        {"q": judged_scorer(answering_judge())},
        sinks=[flaky, sqlite_sink, CallbackSink(collected)],
        drain_on_exit=False,
    )
    for i in range(6):
        live.submit(output=str(i))
    await live.aclose()
    assert live.sink_errors() == {"flaky": 3}
    assert live.stats()["scored"] == 6
    assert len(collected.results) == 6
    assert len(sqlite_sink.query(limit=100)) == 6


def test_a_closed_sqlite_sink_refuses_writes(tmp_path: Path) -> None:
    import asyncio

    sink = SqliteSink(tmp_path / "scores.db")
    sink.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(sink.write([make_result("late")]))


WRITER = """
import asyncio, sys
from live_support import judged_scorer
from scorewatch.live import CallbackSink, LiveScoring, SqliteSink
from scorewatch.testing import ScriptedJudge

def acknowledge(result):
    # runs after the SQLite sink has committed the row
    print("ack", result.id, flush=True)

async def main():
    live = LiveScoring(
        {"q": judged_scorer(ScriptedJudge(lambda request: '{"score": 0.5}'))},
        max_concurrency=8,
        sinks=[SqliteSink(sys.argv[1]), CallbackSink(acknowledge)],
    )
    i = 0
    while True:
        live.submit(input=i, output="answer", run_id=f"agent-{i}", target="bot")
        i += 1
        await asyncio.sleep(0.0005)

asyncio.run(main())
"""


def test_acknowledged_rows_survive_kill_9_of_the_writer(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(WRITER))
    db = tmp_path / "scores.db"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([SRC, TESTS]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    writer = subprocess.Popen(
        [sys.executable, str(script), str(db)], stdout=subprocess.PIPE, text=True, env=env
    )
    acknowledged: list[str] = []
    try:
        assert writer.stdout is not None
        while len(acknowledged) < 300:
            line = writer.stdout.readline()
            assert line, "the writer stopped before acknowledging enough rows"
            acknowledged.append(line.split()[1])
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait(30)
    assert writer.returncode == -signal.SIGKILL
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in conn.execute('SELECT "id" FROM mastra_scorers')}
    missing = set(acknowledged) - stored
    assert not missing, sorted(missing)[:5]
    assert len(stored) >= len(acknowledged)


async def test_credentials_in_the_request_context_never_reach_the_rows(tmp_path: Path) -> None:
    seen: list[Any] = []

    def score(ctx: Any) -> float:
        seen.append(ctx.run.request_context)
        return 1.0

    scorer = sw.create_scorer(id="sees-context", description="").generate_score(score)
    sink = SqliteSink(tmp_path / "scores.db")
    jsonl = JsonlSink(tmp_path / "scores.jsonl")
    live = LiveScoring({"s": scorer}, sinks=[sink, jsonl], drain_on_exit=False)
    context = {
        "tenant": "acme",
        "headers": {"Authorization": "Bearer sk-live-123", "X-Request-Id": "r1"},
        "apiKey": "sk-live-456",
        "author": "jane",
    }
    live.submit(output="x", request_context=context, metadata={"session_token": "t0k"})
    await live.aclose()
    assert seen == [context]  # the scorer sees the context as given
    (row,) = sink.query()
    assert row["requestContext"] == {
        "tenant": "acme",
        "headers": {"Authorization": "[redacted]", "X-Request-Id": "r1"},
        "apiKey": "[redacted]",
        "author": "jane",
    }
    assert row["metadata"]["session_token"] == "[redacted]"
    stored = (tmp_path / "scores.jsonl").read_text() + json.dumps(row)
    assert "sk-live" not in stored and "t0k" not in stored
