"""Erasing stored score rows: a person's rows, by target, trace id, run id or time range.

SQLite and PostgreSQL rows are deleted in one statement that returns what it deleted (ids,
scorer, target, trace, time: never content). SQLite deletes with `secure_delete` on and then
truncates its write-ahead log, so the deleted rows' bytes do not linger in the file. A JSONL file
is append-only while a sink writes it; `erase_jsonl` rewrites it without the matching lines (a
new file, renamed over the old one), to be run while no process appends to it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from .record import iso_timestamp
from .sql import quote

__all__ = ["ERASED_COLUMNS", "Erasure", "erase_jsonl", "erase_postgres", "erase_sqlite"]

ERASED_COLUMNS: Final = ("id", "scorerId", "entityId", "traceId", "createdAt")
"""What erasing reports of each deleted row: enough to audit, no content."""
_TABLE: Final = "mastra_scorers"


@dataclass(frozen=True, slots=True)
class Erasure:
    """Which rows to erase: every given condition must hold (at least one is required).

    `run_id` matches the score row's run id or the agent's own run id (`metadata.agentRunId`);
    the time range is `since` (inclusive) to `until` (exclusive) on `createdAt`."""

    target: str | None = None
    trace_id: str | None = None
    run_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if not any(getattr(self, name) is not None for name in self.__slots__):
            raise ValueError("an erasure names at least a target, trace id, run id or time range")

    def describe(self) -> dict[str, str]:
        """The conditions, for the audit line."""
        found: dict[str, str] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if value is not None:
                found[name] = iso_timestamp(value) if isinstance(value, datetime) else value
        return found

    def _where(self, mark: str, agent_run: str, time: Any) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.target is not None:
            clauses.append(f"{quote('entityId')} = {mark}")
            params.append(self.target)
        if self.trace_id is not None:
            clauses.append(f"{quote('traceId')} = {mark}")
            params.append(self.trace_id.lower())
        if self.run_id is not None:
            clauses.append(f"({quote('runId')} = {mark} OR {agent_run} = {mark})")
            params += [self.run_id, self.run_id]
        if self.since is not None:
            clauses.append(f"{quote('createdAt')} >= {mark}")
            params.append(time(self.since))
        if self.until is not None:
            clauses.append(f"{quote('createdAt')} < {mark}")
            params.append(time(self.until))
        return " AND ".join(clauses), params

    def matches(self, row: Mapping[str, Any]) -> bool:
        """Whether a row (as `ScoreRecord.to_row()` made it) is one to erase."""
        if self.target is not None and row.get("entityId") != self.target:
            return False
        if self.trace_id is not None and row.get("traceId") != self.trace_id.lower():
            return False
        if self.run_id is not None:
            metadata = row.get("metadata")
            agent_run = metadata.get("agentRunId") if isinstance(metadata, Mapping) else None
            if self.run_id not in (row.get("runId"), agent_run):
                return False
        created = row.get("createdAt")
        if self.since is not None and not (
            isinstance(created, str) and created >= iso_timestamp(self.since)
        ):
            return False
        return self.until is None or (
            isinstance(created, str) and created < iso_timestamp(self.until)
        )


_NAMES: Final = ", ".join(quote(c) for c in ERASED_COLUMNS)


def erase_sqlite(
    path: str | os.PathLike[str], erasure: Erasure, *, table: str = _TABLE, dry_run: bool = False
) -> list[dict[str, Any]]:
    """Delete the matching rows of a SQLite store (none with `dry_run`); returns them (ids,
    not content)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no SQLite store at {path}")
    where, params = erasure._where("?", "json_extract(\"metadata\", '$.agentRunId')", iso_timestamp)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        if dry_run:
            cursor = conn.execute(f"SELECT {_NAMES} FROM {quote(table)} WHERE {where}", params)
        else:
            conn.execute("PRAGMA secure_delete = ON")  # deleted bytes are overwritten
            cursor = conn.execute(
                f"DELETE FROM {quote(table)} WHERE {where} RETURNING {_NAMES}", params
            )
        rows = [dict(zip(ERASED_COLUMNS, values, strict=True)) for values in cursor.fetchall()]
        if not dry_run:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # nor in the write-ahead log
        return rows
    finally:
        conn.close()


def erase_postgres(
    dsn: str, erasure: Erasure, *, schema: str = "public", dry_run: bool = False
) -> list[dict[str, Any]]:
    """Delete the matching rows of a PostgreSQL store (none with `dry_run`); returns them.
    The deleted rows' storage is reclaimed by PostgreSQL's (auto)vacuum."""
    import psycopg

    where, params = erasure._where("%s", "\"metadata\"->>'agentRunId'", lambda moment: moment)
    table = f"{quote(schema)}.{quote(_TABLE)}"
    sql = (
        f"SELECT {_NAMES} FROM {table} WHERE {where}"
        if dry_run
        else f"DELETE FROM {table} WHERE {where} RETURNING {_NAMES}"
    )
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(sql.encode(), params).fetchall()
    return [
        {
            column: iso_timestamp(value) if isinstance(value, datetime) else value
            for column, value in zip(ERASED_COLUMNS, values, strict=True)
        }
        for values in rows
    ]


def erase_jsonl(
    path: str | os.PathLike[str], erasure: Erasure, *, dry_run: bool = False
) -> list[dict[str, Any]]:
    """Rewrite a JSONL store without the matching rows (unchanged with `dry_run`); returns
    them. A line that is not a JSON object is kept as it is."""
    source = Path(path)
    erased: list[dict[str, Any]] = []
    kept: list[str] = []
    with source.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                kept.append(line)
                continue
            if isinstance(row, dict) and erasure.matches(row):
                erased.append({column: row.get(column) for column in ERASED_COLUMNS})
            else:
                kept.append(line)
    if erased and not dry_run:
        handle, temporary = tempfile.mkstemp(dir=source.parent, prefix=f".{source.name}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.writelines(kept)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, source)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return erased
