"""Label stores: SQLite and PostgreSQL keep labels in a table of their own beside the scores,
one per run, scorer and annotator; they find runs by id or by trace, and join labels to the
judge's score for agreement."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

import scorewatch as sw
from scale_support import PG_DSN
from scorewatch.core.call import AgentCall
from scorewatch.sinks import ScoreRecord, SqliteSink
from scorewatch.sinks.labels import (
    LABEL_TABLE,
    SCORE_TABLE,
    JsonlLabelStore,
    Label,
    RunRef,
    SqliteLabelStore,
    label_queries,
)
from scorewatch.sinks.postgres import MIGRATIONS, PostgresSink
from scorewatch.sinks.postgres_labels import PostgresLabelStore
from scorewatch.sinks.record import SCORE_COLUMNS
from scorewatch.sinks.sql import quote

pytestmark = pytest.mark.integration


def _scorer() -> sw.Scorer:
    return sw.create_scorer(id="length", description="Answer length").generate_score(
        lambda ctx: min(len(str(ctx.run.output)) / 10, 1.0)
    )


def _records() -> list[ScoreRecord]:
    """run-0 and run-1 marked for review when scored; run-2 not (it is not in the sample)."""
    scorer = _scorer()
    records = []
    for index, output in enumerate(["abc", "abcdefgh", "abcdefghijkl"]):
        call = AgentCall(
            input="q",
            output=output,
            target="bot",
            trace_id=f"t{index}",
            span_id=f"s{index}",
            run_id=f"r{index}",
        )
        result = scorer.run_sync(output=output)
        marked = index < 2
        records.append(ScoreRecord.success(f"run-{index}", scorer, call, result, review=marked))
    return records


LABELS = [
    Label("run-0", "length", "ana", score=0.2, created_at=datetime(2026, 1, 1, tzinfo=UTC)),
    Label("run-1", "length", "ana", verdict="pass"),
    Label("run-0", "length", "ben", verdict="fail", comment="short"),
]


async def _exercise(store: SqliteLabelStore | PostgresLabelStore) -> None:
    refs = [
        RunRef("length", run_id="run-1"),
        RunRef("length", target="bot", trace_id="t0", span_id="s0"),
        RunRef("length", run_id="missing"),
        RunRef("length", target="bot", trace_id="t0", span_id="other"),
    ]
    found = await store.resolve(refs)
    assert [run.run_id if run else None for run in found] == ["run-1", "run-0", None, None]
    assert found[0] is not None and found[0].score == pytest.approx(0.8)
    assert found[0].scorer_version == _scorer().version_fingerprint
    # Only the runs marked when they were scored are waiting for review; run-2 never is.
    waiting = await store.review_pending("length", limit=10)
    assert [run["id"] for run in waiting] == ["run-1", "run-0"]  # newest first
    assert waiting[0]["output"] == "abcdefgh" and waiting[0]["score"] == pytest.approx(0.8)
    assert [run["id"] for run in await store.review_pending("length", limit=1)] == ["run-1"]
    assert (await store.review_counts("length")).as_dict() == {
        "marked": 2,
        "labelled": 0,
        "pending": 2,
    }
    await store.put(LABELS[:1])
    assert [run["id"] for run in await store.review_pending("length", limit=10)] == ["run-1"]
    assert (await store.review_counts("length")).pending == 1
    await store.put([*LABELS, Label("run-2", "length", "ana", score=0.9)])
    assert await store.review_pending("length", limit=10) == []
    # A label on a run outside the sample does not count in it.
    assert (await store.review_counts("length")).as_dict() == {
        "marked": 2,
        "labelled": 2,
        "pending": 0,
    }
    assert (await store.review_counts("other")).as_dict() == {
        "marked": 0,
        "labelled": 0,
        "pending": 0,
    }
    # Ana relabels run-0: her label is replaced, Ben's stays.
    await store.put([Label("run-0", "length", "ana", score=0.4)])
    labelled = await store.labelled("length")
    by_key = {(r.label["runId"], r.label["annotator"]): r for r in labelled}
    assert set(by_key) == {
        ("run-0", "ana"),
        ("run-1", "ana"),
        ("run-0", "ben"),
        ("run-2", "ana"),
    }
    assert by_key[("run-0", "ana")].label["score"] == 0.4
    assert by_key[("run-0", "ana")].judge_score == pytest.approx(0.3)
    assert by_key[("run-0", "ben")].label["comment"] == "short"
    assert all(r.scorer_version == _scorer().version_fingerprint for r in labelled)
    assert await store.labelled("other") == []


def test_sqlite_label_store(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "scores.db")
    asyncio.run(sink.write(_records()))
    sink.close()
    asyncio.run(_exercise(SqliteLabelStore(tmp_path / "scores.db")))


def test_the_review_queries_read_the_partial_index_of_marked_runs(tmp_path: Path) -> None:
    SqliteSink(tmp_path / "scores.db").close()
    SqliteLabelStore(tmp_path / "scores.db")
    statements = label_queries(quote(LABEL_TABLE), quote(SCORE_TABLE), "?")
    conn = sqlite3.connect(tmp_path / "scores.db")
    try:
        for name, params in (("review_pending", ("length", 5)), ("review_counts", ("length",))):
            plan = conn.execute(f"EXPLAIN QUERY PLAN {statements[name]}", params).fetchall()
            steps = " | ".join(str(step[-1]) for step in plan)
            assert "USING INDEX mastra_scorers_review_idx" in steps, (name, steps)
            assert "SCAN s" not in steps, (name, steps)
    finally:
        conn.close()


def test_a_table_of_an_earlier_scorewatch_gains_the_review_mark(tmp_path: Path) -> None:
    """A database made before review marks: opening it adds the column and its index, its
    old rows read unmarked, and new rows are marked as they are scored."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    columns = ", ".join(
        f'"{c}" TEXT' + (" PRIMARY KEY" if c == "id" else "")
        for c in SCORE_COLUMNS
        if c != "reviewSampled"
    )
    conn.execute(f"CREATE TABLE mastra_scorers ({columns})")
    conn.commit()
    conn.close()
    sink = SqliteSink(path)
    asyncio.run(sink.write(_records()))
    assert {row["id"]: row["reviewSampled"] for row in sink.query()} == {
        "run-0": True,
        "run-1": True,
        "run-2": False,
    }
    sink.close()


def test_postgres_label_store(schema: str) -> None:
    records = _records()

    async def scenario() -> None:
        sink = PostgresSink(PG_DSN, schema=schema)
        await sink.write(records)
        await sink.aclose()
        await _exercise(PostgresLabelStore(PG_DSN, schema=schema))

    asyncio.run(scenario())
    assert MIGRATIONS[-1][0] == 4


def test_jsonl_label_store_appends(tmp_path: Path) -> None:
    store = JsonlLabelStore(tmp_path / "labels.jsonl")
    asyncio.run(store.put(LABELS))
    lines = (tmp_path / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 3 and '"annotator": "ben"' in lines[2]
