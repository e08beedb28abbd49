"""`scorewatch erase`: a person's rows leave SQLite (bytes included), PostgreSQL and JSONL;
the command says which rows went and leaves an audit line without content."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from live_support import constant_scorer
from scorewatch.cli import main
from scorewatch.live import LiveScoring
from scorewatch.sinks import JsonlSink, ScoreSink, SqliteSink

pytestmark = pytest.mark.integration

ADA = "0af7651916cd43dd8448eb211c80319c"
BOB = "4bf92f3577b34da6a3ce929d0e0e4736"
SECRET_INPUT = "ada-private-question-7f3e"


async def store_calls(sinks: Sequence[ScoreSink]) -> None:
    live = LiveScoring({"constant": constant_scorer()}, sinks=sinks, drain_on_exit=False)
    live.submit(input=SECRET_INPUT, output="a", target="support-bot", trace_id=ADA, run_id="r1")
    live.submit(input="bob's", output="b", target="support-bot", trace_id=BOB, run_id="r2")
    live.submit(input="carol's", output="c", target="billing-bot", run_id="r3")
    await live.aclose()


def erase(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, dict[str, object]]:
    code = main(["erase", *args])
    out, err = capsys.readouterr()
    audits = [line for line in err.splitlines() if line.startswith("scorewatch erase: audit ")]
    audit = json.loads(audits[0].removeprefix("scorewatch erase: audit ")) if audits else {}
    return code, out, audit


async def test_sqlite_rows_of_a_trace_are_gone_bytes_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "scores.db"
    await store_calls([SqliteSink(db)])
    assert SECRET_INPUT.encode() in db.read_bytes() + _wal(db)
    log = tmp_path / "audit.log"
    code, out, audit = erase(
        capsys, "--store", str(db), "--trace-id", ADA.upper(), "--audit-log", str(log)
    )
    assert code == 0
    assert "deleted 1 row(s)" in out and ADA in out and SECRET_INPUT not in out
    assert audit["rows"] == 1 and audit["conditions"] == {"trace_id": ADA.upper()}
    assert SECRET_INPUT not in json.dumps(audit)
    assert json.loads(log.read_text())["rows"] == 1
    remaining = SqliteSink(db).query()
    assert sorted(row["traceId"] or "" for row in remaining) == sorted(["", BOB])
    # Not only unlisted: the deleted row's bytes are no longer in the file or its log.
    assert SECRET_INPUT.encode() not in db.read_bytes() + _wal(db)


async def test_conditions_combine_and_dry_run_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "scores.db"
    await store_calls([SqliteSink(db)])
    code, out, audit = erase(capsys, "--store", str(db), "--target", "support-bot", "--dry-run")
    assert code == 0 and "would delete 2 row(s)" in out and audit["dry_run"] is True
    assert len(SqliteSink(db).query()) == 3
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    code, out, _ = erase(capsys, "--store", str(db), "--run-id", "r3", "--since", future)
    assert code == 0 and "deleted 0 row(s)" in out
    code, out, _ = erase(capsys, "--store", str(db), "--run-id", "r3", "--until", future)
    assert code == 0 and "deleted 1 row(s)" in out
    assert {row["entityId"] for row in SqliteSink(db).query()} == {"support-bot"}


def test_an_erasure_needs_a_condition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "scores.db"
    SqliteSink(db).close()
    assert main(["erase", "--store", str(db)]) == 2
    assert "at least a target, trace id, run id or time range" in capsys.readouterr().err


async def test_a_jsonl_store_is_rewritten_without_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = tmp_path / "scores.jsonl"
    await store_calls([JsonlSink(lines)])
    code, out, audit = erase(capsys, "--store", str(lines), "--run-id", "r1")
    assert code == 0 and "deleted 1 row(s)" in out and audit["kind"] == "jsonl"
    kept = [json.loads(line) for line in lines.read_text().splitlines()]
    assert len(kept) == 2 and SECRET_INPUT not in lines.read_text()


async def test_postgresql_rows_are_deleted(schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    from scale_support import PG_DSN
    from scorewatch.sinks.postgres import PostgresSink

    sink = PostgresSink(PG_DSN, schema=schema)
    await store_calls([sink])
    code, out, audit = erase(
        capsys, "--store", PG_DSN, "--schema", schema, "--target", "support-bot"
    )
    assert code == 0 and "deleted 2 row(s)" in out and audit["kind"] == "postgresql"
    reader = PostgresSink(PG_DSN, schema=schema)
    try:
        remaining = await reader.aquery()
    finally:
        await reader.aclose()
    assert [row["entityId"] for row in remaining] == ["billing-bot"]


def _wal(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""
