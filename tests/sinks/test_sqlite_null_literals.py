"""The SQLite sink writes a row's None columns as `NULL` literals (`SqliteSink._statements`):
the table ends as the one plain statement binding every value leaves, row for row, in order."""

from __future__ import annotations

import asyncio
import operator
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


def _statements_by_flags(
    sink: SqliteSink, rows: list[tuple[Any, ...]]
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The former `SqliteSink._statements`, kept as the reference: every row's flags read
    column by column (the sink's statements cache shared, so the same texts)."""
    from itertools import compress

    statements = sink._statements_by_nulls
    out: list[tuple[str, list[tuple[Any, ...]]]] = []
    nones = (None,) * len(SCORE_COLUMNS)
    for row in rows:
        bound = tuple(map(operator.is_not, row, nones))
        row_sql = statements.get(bound)
        if row_sql is None:
            if len(statements) < 64:
                row_sql = statements[bound] = upsert_sql(sink._table_sql, "?", bound)
            else:
                row_sql, bound = sink._upsert_sql, (True,) * len(SCORE_COLUMNS)
        if not out or out[-1][0] != row_sql:
            out.append((row_sql, []))
        out[-1][1].append(tuple(compress(row, bound)))
    return out


_ODD_VALUES = st.sampled_from([None, "", 0, 0.0, False, float("nan"), "None", "x"])


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.lists(
            st.lists(
                st.tuples(st.sampled_from(range(len(SCORE_COLUMNS))), _ODD_VALUES), max_size=41
            ),
            min_size=1,
            max_size=8,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_rows_tried_against_the_last_set_of_columns_group_as_before(
    template: tuple[Any, ...], tmp_path_factory: pytest.TempPathFactory, batches: list[Any]
) -> None:
    """`_statements` tries each row against the last row's set of columns first (kept from one
    batch to the next): the statements, their groups and the bound values are the ones the
    flags of every column give, whatever the rows hold (values that are false, or read as
    None, or are None in a column bound before)."""
    sink = SqliteSink(tmp_path_factory.mktemp("shapes") / "s.db")
    sink.close()
    for batch in batches:
        rows = []
        for changes in batch:
            row = list(template)
            for at, value in changes:
                row[at] = value
            rows.append(tuple(row))
        expected = _statements_by_flags(sink, rows)
        got = [(sql, list(group)) for sql, group in sink._statements(rows)]
        assert [sql for sql, _group in got] == [sql for sql, _group in expected]
        assert got == expected  # (NaN values: the same objects, so `==` holds)
        for (_sql, group), (_sql2, old) in zip(got, expected, strict=True):
            for values, old_values in zip(group, old, strict=True):
                assert len(values) == len(old_values)
                assert all(map(operator.is_, values, old_values))


def test_a_row_unlike_the_last_one_starts_its_own_statement(
    template: tuple[Any, ...], tmp_path: Path
) -> None:
    sink = SqliteSink(tmp_path / "s.db")
    sink.close()
    other = list(template)
    other[SCORE_COLUMNS.index("reason")] = None
    other[SCORE_COLUMNS.index("traceId")] = "trace"
    rows = [template, tuple(other), template, template]
    got = list(sink._statements(rows))
    assert [len(group) for _sql, group in got] == [1, 1, 2]
    assert got == _statements_by_flags(sink, rows)
    assert sink._last_shape is not None
