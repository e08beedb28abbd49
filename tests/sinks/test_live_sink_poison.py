"""Every sink stores every value the intake accepts, and a bad row is not an outage (issue 17,
items 1-2), against real SQLite, a real file and a real PostgreSQL: NUL, unpaired surrogates and
non-finite numbers are stored; a batch with a row the sink refuses stores every other row and
refuses exactly that one (`RowsRefusedError`); a database that is down (locked) is an ordinary
error, so callers retry it."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

import scorewatch as sw
from scale_support import PG_DSN
from scorewatch.live import AgentCall, CallbackSink, JsonlSink, ScoreRecord, SqliteSink
from scorewatch.sinks.base import RowsRefusedError
from scorewatch.sinks.delivery import deliver
from scorewatch.sinks.postgres import PostgresSink

pytestmark = pytest.mark.integration

FFFD = "\ufffd"
NASTY = "a\x00b\ud800c\udfffd"
CLEAN = f"a{FFFD}b{FFFD}c{FFFD}d"


def result(run_id: str, output: Any, *, metadata: dict[str, Any] | None = None) -> ScoreRecord:
    call = AgentCall(
        input=NASTY,
        output=output,
        target="bot",
        trace_id=None,
        span_id=None,
        run_id=run_id,
        metadata=metadata,
    )
    snapshot = sw.ScorerRunResult(run_id=run_id, input=NASTY, output=output, score=0.5)
    return ScoreRecord(
        id=run_id,
        scorer_id="length",
        scorer_name="length",
        scorer_description="d",
        has_judge=False,
        call=call,
        status="success",
        result=snapshot,
    )


NASTY_OUTPUT = {"text": NASTY, f"key{NASTY}": [1.0, math.nan, math.inf, -math.inf]}
CLEAN_OUTPUT = {"text": CLEAN, f"key{CLEAN}": [1.0, "NaN", "Infinity", "-Infinity"]}


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no text for this one")


# -- SQLite and JSONL ----------------------------------------------------------------------------


async def test_sqlite_and_jsonl_store_nul_surrogates_and_non_finite_numbers(
    tmp_path: Path,
) -> None:
    sqlite, jsonl = SqliteSink(tmp_path / "s.db"), JsonlSink(tmp_path / "s.jsonl")
    try:
        nasty = result("nasty", NASTY_OUTPUT, metadata={"note": NASTY})
        await sqlite.write([nasty])
        await jsonl.write([nasty])
    finally:
        await sqlite.aclose()
        await jsonl.aclose()
    [row] = sqlite.query()
    assert row["input"] == CLEAN and row["output"] == CLEAN_OUTPUT
    assert row["metadata"]["note"] == CLEAN
    [line] = (tmp_path / "s.jsonl").read_text("utf-8").splitlines()
    stored = json.loads(line)  # strict JSON: no NaN tokens
    assert stored["output"] == CLEAN_OUTPUT and stored["input"] == CLEAN


async def test_a_batch_with_a_refused_row_stores_every_other_row(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "s.db")
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON mastra_scorers "
        "WHEN NEW.output LIKE '%POISON%' BEGIN SELECT RAISE(ABORT, 'poison'); END"
    )
    conn.commit()
    conn.close()
    try:
        # One write call with the bad row between good ones, and concurrent writers: the
        # writer thread stores them as one batch, which the trigger aborts.
        with pytest.raises(RowsRefusedError) as refused:
            await sink.write(
                [result("good-1", "a"), result("bad", "POISON"), result("good-2", "b")]
            )
        assert [r.id for r, _error in refused.value.refused] == ["bad"]
        assert isinstance(refused.value.refused[0][1], sqlite3.IntegrityError)

        outcomes = await asyncio.gather(
            *(sink.write([result(f"c-{i}", "POISON" if i == 3 else "ok")]) for i in range(8)),
            return_exceptions=True,
        )
        assert [type(o).__name__ for o in outcomes].count("RowsRefusedError") == 1
        assert isinstance(outcomes[3], RowsRefusedError)
    finally:
        await sink.aclose()
    stored = {row["id"] for row in sink.query(limit=100)}
    assert stored == {"good-1", "good-2"} | {f"c-{i}" for i in range(8) if i != 3}


async def test_a_row_that_cannot_be_encoded_is_refused_alone(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "s.jsonl")
    try:
        with pytest.raises(RowsRefusedError) as refused:
            await sink.write([result("ok", "fine"), result("odd", Unprintable())])
    finally:
        await sink.aclose()
    assert [r.id for r, _e in refused.value.refused] == ["odd"]
    lines = (tmp_path / "s.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["ok"]


async def test_a_locked_database_is_an_outage_not_a_bad_row(tmp_path: Path) -> None:
    sink = SqliteSink(tmp_path / "s.db", busy_timeout_ms=50)
    holder = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError):
            await sink.write([result("r", "x")])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await sink.write([result("r", "x")])  # the same row, once the database is back
    await sink.aclose()
    assert [row["id"] for row in sink.query()] == ["r"]


async def test_delivery_replaces_a_refused_row_with_an_unstorable_failure_everywhere(
    tmp_path: Path,
) -> None:
    jsonl = JsonlSink(tmp_path / "s.jsonl")
    sqlite = SqliteSink(tmp_path / "s.db")
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON mastra_scorers "
        "WHEN NEW.output LIKE '%POISON%' BEGIN SELECT RAISE(ABORT, 'poison'); END"
    )
    conn.commit()
    conn.close()
    errors: list[str] = []
    try:
        delivery = await deliver(
            [jsonl, sqlite], result("bad", "POISON"), lambda name, _e: errors.append(name)
        )
    finally:
        await jsonl.aclose()
        await sqlite.aclose()
    assert delivery.refused == ["sqlite"] and delivery.complete
    assert delivery.stored.status == "failed" and delivery.stored.error_code == "unstorable"
    assert errors == ["sqlite"]
    [row] = sqlite.query()
    assert row["status"] == "failed" and row["output"] is None
    last = json.loads((tmp_path / "s.jsonl").read_text("utf-8").splitlines()[-1])
    assert last["id"] == "bad" and last["errorCode"] == "unstorable"


async def test_a_callback_failing_on_one_result_still_gets_the_others() -> None:
    seen: list[str] = []

    def keep(live: ScoreRecord) -> None:
        if live.id == "bad":
            raise ValueError("not this one")
        seen.append(live.id)

    with pytest.raises(RowsRefusedError) as refused:
        await CallbackSink(keep).write([result("a", "x"), result("bad", "x"), result("b", "x")])
    assert seen == ["a", "b"]
    assert [r.id for r, _e in refused.value.refused] == ["bad"]


# -- PostgreSQL ----------------------------------------------------------------------------------


async def test_postgres_stores_what_it_would_refuse_and_refuses_bad_rows_alone(
    schema: str,
) -> None:
    sink = PostgresSink(PG_DSN, schema=schema)
    try:
        await sink.migrate()
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(
                f'ALTER TABLE "{schema}".mastra_scorers ADD CONSTRAINT no_poison '
                "CHECK (output::text NOT LIKE '%POISON%')".encode()
            )
        nasty = result("nasty", NASTY_OUTPUT, metadata={"note": NASTY})
        await sink.write([nasty])
        [row] = await sink.aquery(ids=["nasty"])
        assert row["input"] == CLEAN and row["output"] == CLEAN_OUTPUT
        assert row["metadata"]["note"] == CLEAN

        with pytest.raises(RowsRefusedError) as refused:
            await sink.write([result("p-1", "a"), result("p-bad", "POISON"), result("p-2", "b")])
        assert [r.id for r, _e in refused.value.refused] == ["p-bad"]
        assert isinstance(refused.value.refused[0][1], psycopg.IntegrityError)
        stored = {row["id"] for row in await sink.aquery(limit=10)}
        assert stored == {"nasty", "p-1", "p-2"}
    finally:
        await sink.aclose()
