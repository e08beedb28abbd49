"""The SQLite sink writes a row's None columns as `NULL` literals (`SqliteSink._statements`):
the table ends as the one plain statement binding every value leaves, row for row, in order."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorewatch.core.call import AgentCall
from scorewatch.live.engine import score_call
from scorewatch.scorers.registry import build_scorer
from scorewatch.sinks.sql import quote, upsert_sql
from scorewatch.sinks.sqlite import _DEFAULT_TABLE, SCORE_COLUMNS, SqliteSink

pytestmark = pytest.mark.integration

_NOT_NULL = ("id", "scorerId", "runId", "source", "createdAt", "updatedAt", "status")


def _encoded_row(tmp: Path) -> tuple[Any, ...]:
    call = AgentCall(input="What is the refund policy?", output="30 days.", target="bot")
    record = asyncio.run(score_call(build_scorer("content-similarity"), call, "scoring-a-b"))
    sink = SqliteSink(tmp / "encode.db")
    sink.close()
    return sink._encode(record)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, ...]:
    return _encoded_row(tmp_path_factory.mktemp("row"))


def _stored(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT * FROM {quote(_DEFAULT_TABLE)} ORDER BY rowid").fetchall()


_nullable = [c for c in SCORE_COLUMNS if c not in _NOT_NULL]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sets(st.sampled_from(_nullable)), st.integers(0, 9)),
        min_size=1,
        max_size=12,
    )
)
def test_null_literals_store_what_binding_every_value_stores(
    template: tuple[Any, ...], tmp_path_factory: pytest.TempPathFactory, rows_spec: list[Any]
) -> None:
    index = {name: at for at, name in enumerate(SCORE_COLUMNS)}
    rows = []
    for run, nulls, score in rows_spec:
        row = list(template)
        row[index["id"]] = f"run-{run}"  # the same id again: the later row must win, as before
        row[index["score"]] = score / 10
        for name in nulls:
            row[index[name]] = None
        rows.append(tuple(row))
    tmp = tmp_path_factory.mktemp("nulls")
    sink = SqliteSink(tmp / "literals.db")
    try:
        sink._store(rows)
    finally:
        sink._release()
        sink.close()
    plain = SqliteSink(tmp / "plain.db")
    plain.close()
    with sqlite3.connect(tmp / "plain.db") as conn:
        conn.executemany(upsert_sql(quote(_DEFAULT_TABLE), "?"), rows)
    assert _stored(tmp / "literals.db") == _stored(tmp / "plain.db")


def test_a_not_null_column_given_none_is_still_refused(
    template: tuple[Any, ...], tmp_path: Path
) -> None:
    row = list(template)
    row[SCORE_COLUMNS.index("status")] = None
    sink = SqliteSink(tmp_path / "refused.db")
    try:
        with pytest.raises(sqlite3.IntegrityError):
            sink._store([tuple(row)])
    finally:
        sink._release()
        sink.close()


def test_upsert_sql_refuses_flags_that_do_not_fit_the_columns() -> None:
    with pytest.raises(ValueError, match="flags"):
        upsert_sql('"scores"', "?", (True,))
