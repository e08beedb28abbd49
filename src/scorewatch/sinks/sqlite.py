"""`SqliteSink`: score records as rows in a SQLite database (stdlib sqlite3, WAL).

Rows follow the reference system's `mastra_scorers` table (camelCase columns, JSON as text, ISO
timestamps: docs/reference-semantics.md, "The score row"), plus `target`, `status`, `judge` (the
judge records as JSON) and the failure fields `error`, `errorCode`, `errorType`, `failedStep`,
`completedSteps`. A failed run is a row with `status='failed'` and no score.

Writes happen on one writer thread that commits concurrent writes together; `write` returns
after the commit, so an acknowledged row survives a crash of the process (with
`synchronous="NORMAL"`, the WAL default; use `"FULL"` to survive power loss too). Rows are
upserted on the deterministic run id, so delivering a run twice leaves one row. With
`on_caller_loop` (serve's), a write acknowledged by callback (`write_then`) from a running event
loop is stored by that loop instead, at the end of the linger (`BatchWriterThread`).
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import compress
from pathlib import Path
from typing import Any, Final, Literal, Unpack

from .base import RunQuery
from .batch_thread import ThreadedSink
from .record import (
    JSON_COLUMNS,
    SCORE_COLUMNS,
    ScoreRecord,
    decode_row,
    encode_record,
    iso_timestamp,
)
from .sql import (
    add_columns_sql,
    create_table_sql,
    filter_conditions,
    quote,
    review_index_sql,
    select_sql,
    upsert_sql,
)

__all__ = ["SCORE_COLUMNS", "SERVICE_LINGER_S", "SqliteSink"]

SERVICE_LINGER_S: Final = 0.02
"""How long serve's SQLite writer waits for more rows after the first of a transaction (its
`linger`): at a few hundred scored runs per second, runs that finish apart share a transaction
instead of paying one each (a transaction's fixed cost, about ten pages written to the WAL, is
most of a row's). A run is stored up to 20 ms later, unless a client waits for it (`?wait=true`)
or runs wait for the slot it holds: those writes are urgent and end the wait at once. The
default, 0, suits callers that await each write in turn (an evaluation writing item after
item)."""

# `SqliteSink._statements`: which columns of a row are bound (not None), and the statements
# kept for as many such sets.
_is_not: Final = operator.is_not
_NONES: Final = (None,) * len(SCORE_COLUMNS)
_ALL_BOUND: Final = (True,) * len(SCORE_COLUMNS)
_STATEMENTS_LIMIT: Final = 64

_TYPES: Final[dict[str, str]] = {
    "id": "TEXT NOT NULL PRIMARY KEY",
    "scorerId": "TEXT NOT NULL",
    "runId": "TEXT NOT NULL",
    "score": "REAL",
    "source": "TEXT NOT NULL",
    "structuredOutput": "INTEGER",
    "createdAt": "TEXT NOT NULL",
    "updatedAt": "TEXT NOT NULL",
    "status": "TEXT NOT NULL",
    "reviewSampled": "INTEGER",
}
_DEFAULT_TABLE: Final = "mastra_scorers"
# JSON travels as text; the one boolean column as an integer.
_ENCODE: Final[dict[str, Callable[[Any], Any]]] = {
    "structuredOutput": lambda value: int(bool(value)),
    "reviewSampled": lambda value: int(bool(value)),
}


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _loads(text: Any) -> Any:
    # A value some other writer put there is returned as it is rather than failing the read.
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _as_text(moment: Any) -> Any:
    return iso_timestamp(moment) if isinstance(moment, datetime) else moment


_DECODE: Final[dict[str, Callable[[Any], Any]]] = {
    **dict.fromkeys(JSON_COLUMNS, _loads),
    "structuredOutput": bool,
    "reviewSampled": bool,
}

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]


@dataclass(frozen=True, slots=True)
class _Shape:
    """A set of bound columns (`bound`, a flag per column) and its statement: `nones_of(row)`
    reads the columns written `NULL` (`nones` when they are all None), `values_of(row)` the
    bound ones, as `compress(row, bound)` would."""

    sql: str
    nones: tuple[None, ...]
    nones_of: Callable[[tuple[Any, ...]], tuple[Any, ...]]
    values_of: Callable[[tuple[Any, ...]], tuple[Any, ...]]

    @staticmethod
    def of(bound: tuple[bool, ...], sql: str) -> _Shape | None:
        """None when fewer than two columns are None or bound (`itemgetter` of one index
        returns the value, not a tuple): such rows take the general way."""
        nulls = [index for index, flag in enumerate(bound) if not flag]
        kept = [index for index, flag in enumerate(bound) if flag]
        if len(nulls) < 2 or len(kept) < 2:
            return None
        return _Shape(
            sql, (None,) * len(nulls), operator.itemgetter(*nulls), operator.itemgetter(*kept)
        )


class SqliteSink(ThreadedSink):
    name = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = _DEFAULT_TABLE,
        synchronous: Synchronous = "NORMAL",
        busy_timeout_ms: int = 5000,
        linger: float = 0.0,
        on_caller_loop: bool = False,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.table = table
        self._table_sql = quote(table)
        self._synchronous = synchronous
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._upsert_sql = upsert_sql(self._table_sql, "?")
        # Per set of columns bound (`_statements`); bounded, as sqlite3's statement cache is.
        self._statements_by_nulls: dict[tuple[bool, ...], str] = {}
        self._last_shape: _Shape | None = None  # the set of columns of the last row stored
        setup = self._connect()
        try:
            self._create_schema(setup)
        finally:
            setup.close()
        self._conn: sqlite3.Connection | None = None
        self._start_writer("sqlite-sink", linger=linger, on_caller_loop=on_caller_loop)

    def _connect(self) -> sqlite3.Connection:
        # Switching a new file to WAL takes an exclusive lock, and SQLite answers a second
        # process switching at the same moment (serve's workers starting together) with
        # "database is locked" at once, without waiting on the busy timeout: retried here until
        # that timeout has passed.
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        while True:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                return conn
            except sqlite3.OperationalError as error:
                conn.close()
                if "locked" not in str(error) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.02)

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        for statement in create_table_sql(self._table_sql, self.table, _TYPES, text_type="TEXT"):
            conn.execute(statement)
        # A table an earlier scorewatch made gets the columns added since (scorerVersion,
        # reviewSampled).
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({self._table_sql})")}
        for statement in add_columns_sql(self._table_sql, present, _TYPES, text_type="TEXT"):
            try:
                conn.execute(statement)
            except sqlite3.OperationalError as error:
                if "duplicate column" not in str(error):  # another process added it first
                    raise
        conn.execute(review_index_sql(self._table_sql, self.table))

    # -- writer thread ---------------------------------------------------------------------------

    def _encode(self, result: ScoreRecord) -> tuple[Any, ...]:
        return encode_record(result, convert=_ENCODE)

    def _refuses(self, error: Exception) -> bool:
        if isinstance(error, sqlite3.IntegrityError | sqlite3.DataError | sqlite3.InterfaceError):
            return True
        # Locked, read-only, disk full, I/O error, a broken file: the database, not the row.
        return not isinstance(error, sqlite3.Error | OSError | MemoryError)

    def _store(self, rows: list[tuple[Any, ...]]) -> None:
        if self._conn is None:
            self._conn = self._connect()
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, group in self._statements(rows):
                conn.executemany(sql, group)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _statements(
        self, rows: list[tuple[Any, ...]]
    ) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
        """The rows in their order, each run of rows with None in the same columns under one
        statement that writes those columns `NULL` and binds only the others. The `sqlite3`
        module adapts every None it binds by a failed attribute look-up (about a microsecond
        each on CPython 3.11, with ~20 of a row's 41 columns None): a literal costs nothing.

        A row is first tried against the last set of columns seen (`_Shape`): most rows have
        None where the row before had it, and two C-level reads tell so, where the flags of
        every column cost a call each (~19k instructions a row)."""
        statements = self._statements_by_nulls
        shape = self._last_shape
        group: list[tuple[Any, ...]] = []
        sql = ""
        for row in rows:
            if shape is not None and shape.nones_of(row) == shape.nones:
                values = shape.values_of(row)
                if None not in values:  # every bound column holds a value: the same set
                    if shape.sql is not sql:
                        if group:
                            yield sql, group
                        sql, group = shape.sql, []
                    group.append(values)
                    continue
            bound = tuple(map(_is_not, row, _NONES))
            row_sql = statements.get(bound)
            if row_sql is None:
                if len(statements) < _STATEMENTS_LIMIT:
                    row_sql = statements[bound] = upsert_sql(self._table_sql, "?", bound)
                else:  # many kinds of rows: the rest bind their None as they are
                    row_sql, bound = self._upsert_sql, _ALL_BOUND
            shape = self._last_shape = _Shape.of(bound, row_sql)
            if row_sql is not sql:
                if group:
                    yield sql, group
                sql, group = row_sql, []
            group.append(tuple(compress(row, bound)))
        if group:
            yield sql, group

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- reading ---------------------------------------------------------------------------------

    def query(self, **query: Unpack[RunQuery]) -> list[dict[str, Any]]:
        """Stored rows, newest first, JSON columns decoded (filters: `ScoreQuery`, and `ids`
        keeps only these run ids)."""
        since, until = (_as_text(query.get(bound)) for bound in ("since", "until"))
        conditions = filter_conditions(query, since, RunQuery.__optional_keys__, until=until)
        ids = query.get("ids")
        if ids is not None:  # one parameter however many ids: a JSON array SQLite unpacks
            conditions.append(("id", "IN (SELECT value FROM json_each({}))", json.dumps(list(ids))))
        sql, params = select_sql(
            self._table_sql,
            "?",
            conditions,
            query.get("limit"),
            query.get("order"),
            query.get("after"),
        )
        conn = sqlite3.connect(self.path, check_same_thread=False)
        # Text another tool stored as bytes that are not UTF-8 is read, not an error.
        conn.text_factory = _decode_text
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            return [decode_row(SCORE_COLUMNS, row, _DECODE) for row in conn.execute(sql, params)]
        finally:
            conn.close()

    async def aquery(self, **query: Unpack[RunQuery]) -> list[dict[str, Any]]:
        """`query` on a worker thread, for async callers."""
        return await asyncio.to_thread(lambda: self.query(**query))
