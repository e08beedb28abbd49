"""`SqliteSink`: live results as score rows in a SQLite database (stdlib sqlite3, WAL).

Rows follow the reference system's `mastra_scorers` table (spec §9: camelCase columns, JSON as
text, ISO timestamps), plus `target`, `status`, `judge` (the judge records as JSON) and the
failure fields `error`, `errorCode`, `errorType`, `failedStep`, `completedSteps`. A failed run is
a row with `status='failed'` and no score.

Writes happen on one writer thread that commits concurrent writes together; `write` returns
after the commit, so an acknowledged row survives a crash of the process (with
`synchronous="NORMAL"`, the WAL default; use `"FULL"` to survive power loss too). Rows are
upserted on the deterministic run id, so delivering a run twice leaves one row.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from ..result import LiveResult, iso_timestamp
from .batch_thread import BatchWriterThread

__all__ = ["SCORE_COLUMNS", "SqliteSink"]

# (column, SQL type, stored as JSON text)
_COLUMNS: Final[tuple[tuple[str, str, bool], ...]] = (
    ("id", "TEXT NOT NULL PRIMARY KEY", False),
    ("scorerId", "TEXT NOT NULL", False),
    ("entityId", "TEXT", False),
    ("runId", "TEXT NOT NULL", False),
    ("input", "TEXT", True),
    ("output", "TEXT", True),
    ("additionalContext", "TEXT", True),
    ("requestContext", "TEXT", True),
    ("extractStepResult", "TEXT", True),
    ("extractPrompt", "TEXT", False),
    ("score", "REAL", False),
    ("analyzeStepResult", "TEXT", True),
    ("analyzePrompt", "TEXT", False),
    ("reason", "TEXT", False),
    ("reasonPrompt", "TEXT", False),
    ("scorer", "TEXT", True),
    ("metadata", "TEXT", True),
    ("source", "TEXT NOT NULL", False),
    ("entity", "TEXT", True),
    ("entityType", "TEXT", False),
    ("structuredOutput", "INTEGER", False),
    ("traceId", "TEXT", False),
    ("spanId", "TEXT", False),
    ("resourceId", "TEXT", False),
    ("threadId", "TEXT", False),
    ("preprocessStepResult", "TEXT", True),
    ("preprocessPrompt", "TEXT", False),
    ("generateScorePrompt", "TEXT", False),
    ("generateReasonPrompt", "TEXT", False),
    ("createdAt", "TEXT NOT NULL", False),
    ("updatedAt", "TEXT NOT NULL", False),
    ("target", "TEXT", False),
    ("status", "TEXT NOT NULL", False),
    ("judge", "TEXT", True),
    ("error", "TEXT", False),
    ("errorCode", "TEXT", False),
    ("errorType", "TEXT", False),
    ("failedStep", "TEXT", False),
    ("completedSteps", "TEXT", True),
)

SCORE_COLUMNS: Final[tuple[str, ...]] = tuple(name for name, _, _ in _COLUMNS)
_JSON_COLUMNS: Final = frozenset(name for name, _, as_json in _COLUMNS if as_json)
_BOOL_COLUMNS: Final = frozenset({"structuredOutput"})
_DEFAULT_TABLE: Final = "mastra_scorers"

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]


def _quote(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return f'"{name}"'


def _encode(row: dict[str, Any]) -> tuple[Any, ...]:
    values: list[Any] = []
    for column in SCORE_COLUMNS:
        value = row.get(column)
        if column in _JSON_COLUMNS and value is not None:
            value = json.dumps(value, ensure_ascii=False, default=repr)
        elif column in _BOOL_COLUMNS and value is not None:
            value = int(bool(value))
        elif column == "reason" and value is not None and not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False, default=repr)
        values.append(value)
    return tuple(values)


def _decode(row: sqlite3.Row) -> dict[str, Any]:
    decoded: dict[str, Any] = {}
    for column in row.keys():  # noqa: SIM118 - sqlite3.Row is not a mapping
        value = row[column]
        if column in _JSON_COLUMNS and value is not None:
            value = json.loads(value)
        elif column in _BOOL_COLUMNS and value is not None:
            value = bool(value)
        decoded[column] = value
    return decoded


class SqliteSink:
    name = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = _DEFAULT_TABLE,
        synchronous: Synchronous = "NORMAL",
        busy_timeout_ms: int = 5000,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.table = table
        self._table_sql = _quote(table)
        self._synchronous = synchronous
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._upsert_sql = self._build_upsert()
        setup = self._connect()
        try:
            self._create_schema(setup)
        finally:
            setup.close()
        self._conn: sqlite3.Connection | None = None
        self._writer = BatchWriterThread("sqlite-sink", self._store, self._release)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        return conn

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        columns = ", ".join(f"{_quote(name)} {kind}" for name, kind, _ in _COLUMNS)
        conn.execute(f"CREATE TABLE IF NOT EXISTS {self._table_sql} ({columns})")
        for suffix, keys in (
            ("entity_created", ("entityId", "createdAt")),
            ("scorer_created", ("scorerId", "createdAt")),
            ("created", ("createdAt",)),
        ):
            index = _quote(f"{self.table}_{suffix}_idx")
            key_sql = ", ".join(_quote(k) for k in keys)
            conn.execute(f"CREATE INDEX IF NOT EXISTS {index} ON {self._table_sql} ({key_sql})")

    def _build_upsert(self) -> str:
        names = ", ".join(_quote(c) for c in SCORE_COLUMNS)
        marks = ", ".join("?" for _ in SCORE_COLUMNS)
        updates = ", ".join(
            f"{_quote(c)} = excluded.{_quote(c)}"
            for c in SCORE_COLUMNS
            if c not in ("id", "createdAt")
        )
        return (
            f"INSERT INTO {self._table_sql} ({names}) VALUES ({marks}) "
            f"ON CONFLICT({_quote('id')}) DO UPDATE SET {updates}"
        )

    # -- writer thread ---------------------------------------------------------------------------

    def _store(self, batch: list[LiveResult]) -> None:
        if self._conn is None:
            self._conn = self._connect()
        conn = self._conn
        rows = [_encode(result.to_row()) for result in batch]
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(self._upsert_sql, rows)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- sink protocol ---------------------------------------------------------------------------

    async def write(self, results: Sequence[LiveResult]) -> None:
        await self._writer.write(results)

    async def aclose(self) -> None:
        await self._writer.aclose()

    def close(self, timeout: float | None = None) -> None:
        """Store what is queued and release the file (waits up to `timeout` seconds)."""
        self._writer.close(timeout)

    # -- reading ---------------------------------------------------------------------------------

    def query(
        self,
        *,
        target: str | None = None,
        scorer: str | None = None,
        since: datetime | str | None = None,
        status: Literal["success", "failed"] | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Stored rows, newest first, JSON columns decoded. `since` is inclusive (a datetime or
        an ISO timestamp as stored); `target` matches `entityId`, `scorer` matches `scorerId`."""
        clauses: list[str] = []
        params: list[Any] = []
        if target is not None:
            clauses.append(f"{_quote('entityId')} = ?")
            params.append(target)
        if scorer is not None:
            clauses.append(f"{_quote('scorerId')} = ?")
            params.append(scorer)
        if since is not None:
            clauses.append(f"{_quote('createdAt')} >= ?")
            params.append(iso_timestamp(since) if isinstance(since, datetime) else since)
        if status is not None:
            clauses.append(f"{_quote('status')} = ?")
            params.append(status)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = (
            f"SELECT * FROM {self._table_sql}{where} "
            f"ORDER BY {_quote('createdAt')} DESC, {_quote('id')} DESC LIMIT ?"
        )
        params.append(max(0, int(limit)))
        conn = sqlite3.connect(self.path, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            conn.row_factory = sqlite3.Row
            return [_decode(row) for row in conn.execute(sql, params)]
        finally:
            conn.close()

    async def aquery(self, **filters: Any) -> list[dict[str, Any]]:
        """`query` on a worker thread, for async callers."""
        return await asyncio.to_thread(lambda: self.query(**filters))
