"""Every stored row names the scorer version that made it, and the SQL sinks add the column to
tables an earlier scorewatch created (their old rows read None there)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

import scorewatch as sw
from scale_support import PG_DSN
from scorewatch.core.call import AgentCall
from scorewatch.sinks import SCORE_COLUMNS, JsonlSink, ScoreRecord, SqliteSink
from scorewatch.sinks.postgres import MIGRATIONS, PostgresSink

pytestmark = pytest.mark.integration

OLD_COLUMNS = tuple(column for column in SCORE_COLUMNS if column != "scorerVersion")


def _scorer(version: str | None = None) -> sw.Scorer:
    return sw.create_scorer(
        id="length", description="Answer length", version=version
    ).generate_score(_length)


def _length(ctx: sw.StepContext) -> float:
    return min(len(str(ctx.run.output)) / 10, 1.0)


def _record(run_id: str, scorer: sw.Scorer) -> ScoreRecord:
    call = AgentCall(
        input="q", output="an answer", target="bot", trace_id=None, span_id=None, run_id="r"
    )
    return ScoreRecord.success(run_id, scorer, call, scorer.run_sync(output=call.output))


def test_a_row_carries_the_fingerprint_and_the_declared_version() -> None:
    scorer = _scorer(version="2025-06")
    row = _record("run-1", scorer).to_row()
    assert row["scorerVersion"] == scorer.version_fingerprint
    assert row["scorer"]["declaredVersion"] == "2025-06"
    undeclared = _record("run-2", _scorer()).to_row()
    assert "declaredVersion" not in undeclared["scorer"]
    back = ScoreRecord.from_row(row, _record("run-1", scorer).call)
    assert (back.scorer_version, back.scorer_declared_version) == (
        scorer.version_fingerprint,
        "2025-06",
    )


def _old_sqlite_table(path: Path) -> None:
    """The table as scorewatch made it before rows carried the scorer version, with a row."""
    SqliteSink(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute('ALTER TABLE "mastra_scorers" DROP COLUMN "scorerVersion"')
        columns = [row[1] for row in conn.execute('PRAGMA table_info("mastra_scorers")')]
        assert "scorerVersion" not in columns and len(columns) == len(OLD_COLUMNS)
        conn.execute(
            'INSERT INTO "mastra_scorers" ("id", "scorerId", "runId", "source", "createdAt", '
            '"updatedAt", "status", "score") VALUES '
            "('old-1', 'length', 'old-1', 'LIVE', '2024-01-01T00:00:00.000Z', "
            "'2024-01-01T00:00:00.000Z', 'success', 0.5)"
        )


def test_sqlite_adds_the_column_to_an_earlier_table(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"
    _old_sqlite_table(path)
    scorer = _scorer()
    record = _record("new-1", scorer)
    sink = SqliteSink(path)
    try:
        asyncio.run(sink.write([record]))
        rows = {row["id"]: row for row in sink.query()}
    finally:
        sink.close()
    assert rows["old-1"]["scorerVersion"] is None and rows["old-1"]["score"] == 0.5
    assert rows["new-1"]["scorerVersion"] == scorer.version_fingerprint
    # Opening it again (a second process, a restart) finds the column there.
    SqliteSink(path).close()


def test_jsonl_rows_carry_it(tmp_path: Path) -> None:
    import json

    path = tmp_path / "scores.jsonl"
    scorer = _scorer()
    record = _record("run-1", scorer)
    sink = JsonlSink(path)
    asyncio.run(sink.write([record]))
    sink.close()
    (row,) = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert row["scorerVersion"] == scorer.version_fingerprint


def test_postgres_migration_adds_the_column_to_an_earlier_table(schema: str) -> None:
    # The schema as migration 1 left it before there was a migration 2.
    asyncio.run(PostgresSink(PG_DSN, schema=schema).migrate())
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'ALTER TABLE "{schema}".mastra_scorers DROP COLUMN "scorerVersion"'.encode())
        conn.execute(f'DELETE FROM "{schema}".scorewatch_migrations WHERE version = 2'.encode())
    sink = PostgresSink(PG_DSN, schema=schema)
    scorer = _scorer(version="v2")
    record = _record("run-pg", scorer)

    async def scenario() -> tuple[list[int], list[int], list[dict[str, Any]]]:
        applied = await sink.migrate()
        again = await sink.migrate()
        await sink.write([record])
        rows = await sink.aquery()
        await sink.aclose()
        return applied, again, rows

    applied, again, rows = asyncio.run(scenario())
    assert applied == [2] and again == []
    (row,) = rows
    assert row["scorerVersion"] == scorer.version_fingerprint
    assert row["scorer"]["declaredVersion"] == "v2"


def test_postgres_fresh_schema_runs_both_migrations(schema: str) -> None:
    sink = PostgresSink(PG_DSN, schema=schema)
    record = _record("run-fresh", _scorer())

    async def scenario() -> list[int]:
        applied = await sink.migrate()
        await sink.write([record])
        assert (await sink.aquery())[0]["scorerVersion"] == _scorer().version_fingerprint
        await sink.aclose()
        return applied

    assert asyncio.run(scenario()) == [version for version, *_ in MIGRATIONS]
