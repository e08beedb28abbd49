"""Label stores: SQLite and PostgreSQL keep labels in a table of their own beside the scores,
one per run, scorer and annotator; they find runs by id or by trace, and join labels to the
judge's score for agreement."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

import scorewatch as sw
from scale_support import PG_DSN
from scorewatch.core.call import AgentCall
from scorewatch.sinks import ScoreRecord, SqliteSink
from scorewatch.sinks.labels import JsonlLabelStore, Label, RunRef, SqliteLabelStore
from scorewatch.sinks.postgres import MIGRATIONS, PostgresSink
from scorewatch.sinks.postgres_labels import PostgresLabelStore

pytestmark = pytest.mark.integration


def _scorer() -> sw.Scorer:
    return sw.create_scorer(id="length", description="Answer length").generate_score(
        lambda ctx: min(len(str(ctx.run.output)) / 10, 1.0)
    )


def _records() -> list[ScoreRecord]:
    scorer = _scorer()
    records = []
    for index, output in enumerate(["abc", "abcdefgh"]):
        call = AgentCall(
            input="q",
            output=output,
            target="bot",
            trace_id=f"t{index}",
            span_id=f"s{index}",
            run_id=f"r{index}",
        )
        result = scorer.run_sync(output=output)
        records.append(ScoreRecord.success(f"run-{index}", scorer, call, result))
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
    waiting = await store.unlabelled("length", scan=10)
    assert [run["id"] for run in waiting] == ["run-1", "run-0"]  # newest first
    assert waiting[0]["output"] == "abcdefgh" and waiting[0]["score"] == pytest.approx(0.8)
    await store.put(LABELS[:1])
    assert [run["id"] for run in await store.unlabelled("length", scan=10)] == ["run-1"]
    await store.put(LABELS)
    assert await store.unlabelled("length", scan=10) == []
    # Ana relabels run-0: her label is replaced, Ben's stays.
    await store.put([Label("run-0", "length", "ana", score=0.4)])
    labelled = await store.labelled("length")
    by_key = {(r.label["runId"], r.label["annotator"]): r for r in labelled}
    assert set(by_key) == {("run-0", "ana"), ("run-1", "ana"), ("run-0", "ben")}
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


def test_postgres_label_store(schema: str) -> None:
    records = _records()

    async def scenario() -> None:
        sink = PostgresSink(PG_DSN, schema=schema)
        await sink.write(records)
        await sink.aclose()
        await _exercise(PostgresLabelStore(PG_DSN, schema=schema))

    asyncio.run(scenario())
    assert MIGRATIONS[-1][0] == 3


def test_jsonl_label_store_appends(tmp_path: Path) -> None:
    store = JsonlLabelStore(tmp_path / "labels.jsonl")
    asyncio.run(store.put(LABELS))
    lines = (tmp_path / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 3 and '"annotator": "ben"' in lines[2]
