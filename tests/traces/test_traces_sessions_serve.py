"""Conversations end to end: a real instrumented agent (the openai-v2 instrumentation against the
loopback LLM, exporting OTLP/HTTP with the SDK's exporter) holds several conversations at once,
interleaved, one trace per turn; `scorewatch serve` stores one session row per conversation
with its turns in order, in process and through the Redis queue to a worker, and
`scorewatch score-traces --sessions` does the same over the Collector's files."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from cli_support import scorewatch
from scorewatch.testing.judge_server import LoopbackJudgeServer
from serve_support import ServeProcess, write_config
from trace_intake_support import TOKEN, TracesServe, queued_traces_serve, traces_config
from traces_support import (
    CONVERSATIONS,
    conversation_spans,
    converse,
    echo_first_question,
    instrumented,
    otlp_json,
    texts,
)

pytestmark = pytest.mark.e2e

IN_ORDER = """
[[scorers]]
id = "in-order"
kind = "trajectory-accuracy-code"

[scorers.options]
ordering = "strict"
allow_repeated_steps = false
expected_trajectory = [{ name = "step_1" }, { name = "step_2" }, { name = "step_3" }]
"""


def _config(idle_s: float) -> str:
    return (
        traces_config(extra=IN_ORDER, trace_scorers=("length",))
        + f'\n[traces.sessions]\nscorers = ["in-order"]\nidle_s = {idle_s}\nmax_turns = 10\n'
    )


def _talk(serve: TracesServe, *, end_marked: bool = False) -> None:
    exporter = OTLPSpanExporter(
        endpoint=f"{serve.traces_url}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with (
        LoopbackJudgeServer(echo_first_question) as llm,
        instrumented("genai", also=[exporter]) as (tracer, _),
    ):
        converse(tracer, llm, CONVERSATIONS, 3, end_marked=end_marked)


def _wait(found: Callable[[], list[dict[str, Any]]], count: int, serve: TracesServe) -> list[Any]:
    deadline = time.monotonic() + 40
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        rows = found()
        if len(rows) >= count:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"{len(rows)} rows:\n{serve.process.stderr()[-3000:]}")


def _check_sessions(rows: list[dict[str, Any]]) -> None:
    """One row per conversation, naming it, its first and last trace and its 3 turns in order."""
    assert sorted(row["threadId"] for row in rows) == list(CONVERSATIONS)
    for row in rows:
        session = json.loads(row["metadata"])["session"]
        assert session["conversationId"] == row["threadId"] and session["turns"] == 3
        assert row["traceId"] == session["firstTraceId"] != session["lastTraceId"]
        assert len(set(session["traceIds"])) == 3
        assert row["entityType"] == "session" and row["entityId"] == "shop-agent"
        assert texts(json.loads(row["output"])) == [
            f"re: {row['threadId']} turn {k}" for k in (1, 2, 3)
        ]
        assert row["score"] == 1  # step_1, step_2, step_3: the turns' tools in order


def test_serve_scores_each_interleaved_conversation_once_when_it_goes_idle(
    tmp_path: Path,
) -> None:
    process = ServeProcess(write_config(tmp_path, _config(3.0)), env={"SW_TRACES_TOKEN": TOKEN})
    try:
        process.wait_listening()
        serve = TracesServe(process)
        _talk(serve)

        def sessions() -> list[dict[str, Any]]:
            return [r for r in serve.rows() if r["scorerId"] == "in-order"]

        rows = _wait(sessions, 3, serve)
        _check_sessions(rows)
        # Each turn is also scored on its own by the trace scorers, naming its conversation.
        turns = _wait(lambda: [r for r in serve.rows() if r["scorerId"] == "length"], 9, serve)
        assert sorted(r["threadId"] for r in turns) == sorted(CONVERSATIONS * 3)
        stats = serve.stats()
        assert stats["traces_sessions_closed_idle"] == 3 and stats["traces_sessions_open"] == 0
        serve.wait_metric(
            'scorewatch_traces_sessions_total{scorewatch_traces_outcome="closed_idle"} 3.0'
        )
        time.sleep(1)
        assert len(sessions()) == 3  # never scored twice
        assert process.terminate() == 0
        assert process.final_accounting()["traces_sessions_closed_idle"] == 3
    finally:
        process.kill()


def test_sessions_go_through_the_redis_queue_to_a_worker_closed_by_the_agents_end_marker(
    tmp_path: Path,
) -> None:
    with queued_traces_serve(tmp_path, _config(600.0)) as queued:
        serve = queued.serve
        _talk(serve, end_marked=True)  # idle_s is 10 minutes: only the marker closes them
        rows = _wait(lambda: [r for r in serve.rows() if r["scorerId"] == "in-order"], 3, serve)
        _check_sessions(rows)
        assert all(json.loads(r["metadata"])["session"]["closed"] == "end" for r in rows)
        assert serve.stats()["traces_sessions_closed_end"] == 3
        assert queued.worker.terminate() == 0
        assert serve.process.terminate() == 0
        assert serve.process.final_accounting()["scored"] == 0  # by the worker, not serve


def test_score_traces_command_scores_sessions_into_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "traces.json"
    lines = "".join(otlp_json([span]) + "\n" for span in conversation_spans())
    path.write_text(lines, encoding="utf-8")
    scorers = tmp_path / "scorers.toml"
    scorers.write_text(IN_ORDER, encoding="utf-8")
    db = tmp_path / "scores.db"
    done = scorewatch(
        "score-traces",
        str(path),
        "--scorers",
        str(scorers),
        "--sessions",
        "--sqlite",
        str(db),
        "--format",
        "json",
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["traces"]["sessions"] == {"scored": 3, "closed_flush": 3}
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        rows = [dict(r) for r in connection.execute("SELECT * FROM mastra_scorers")]
    _check_sessions(rows)
