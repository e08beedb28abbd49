"""Experiment results streamed into the live sinks: rows marked TEST, failures never as scores."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import scorewatch as sw
from scorewatch.evals import ExperimentSinkWriter
from scorewatch.sinks import JsonlSink, SqliteSink

pytestmark = pytest.mark.integration


def scorers() -> list[sw.Scorer]:
    ok = sw.create_scorer(id="length", description="d").generate_score(
        lambda ctx: min(1.0, len(str(ctx.run.output)) / 10)
    )

    def explode(ctx: Any) -> str:
        raise RuntimeError("reason step broke")

    late = (
        sw.create_scorer(id="late", description="d")
        .generate_score(lambda ctx: 0.9)
        .generate_reason(explode)
    )
    return [ok, late]


DATA = [
    {"input": "q1", "output": "short", "ground_truth": "g"},
    {"input": "q2", "output": "a much longer answer"},
]


class BrokenSink:
    name = "broken"

    async def write(self, results: Any) -> None:
        raise OSError("disk full")

    async def aclose(self) -> None:
        pass


async def test_results_stream_into_sqlite_and_jsonl(tmp_path: Path) -> None:
    sqlite = SqliteSink(tmp_path / "scores.db")
    jsonl = JsonlSink(tmp_path / "scores.jsonl")
    writer = ExperimentSinkWriter([BrokenSink(), sqlite, jsonl], DATA, experiment_id="exp1")
    result = await sw.run_experiment(data=DATA, scorers=scorers(), on_result=writer)
    assert result.items[0].results["late"].score == 0.9  # recovered, in memory only
    rows = await sqlite.aquery(limit=10)
    await writer.aclose()
    assert writer.errors == {"broken": 4} and writer.written == 4
    assert len(rows) == 4
    assert {row["source"] for row in rows} == {"TEST"}
    by_key = {(row["scorerId"], row["metadata"]["item"]): row for row in rows}
    assert by_key[("length", 0)]["score"] == 0.5 and by_key[("length", 0)]["status"] == "success"
    assert by_key[("length", 1)]["score"] == 1.0
    for item in (0, 1):
        failed = by_key[("late", item)]
        assert failed["status"] == "failed" and failed["score"] is None
        assert failed["failedStep"] == "generateReason"
        assert failed["completedSteps"] == ["generateScore"]
    assert by_key[("length", 0)]["id"] == "experiment-exp1-length-0"
    lines = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert len(lines) == 4


async def test_same_experiment_id_overwrites(tmp_path: Path) -> None:
    for _ in range(2):
        sink = SqliteSink(tmp_path / "scores.db")
        writer = ExperimentSinkWriter([sink], DATA, experiment_id="again")
        await sw.run_experiment(data=DATA, scorers=scorers(), on_result=writer)
        await writer.aclose()
    with sqlite3.connect(tmp_path / "scores.db") as db:
        (count,) = db.execute("select count(*) from sqlite_master where type='table'").fetchone()
        assert count >= 1
    rows = SqliteSink(tmp_path / "scores.db").query(limit=100)
    assert len(rows) == 4
