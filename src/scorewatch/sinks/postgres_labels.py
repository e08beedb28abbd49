"""`PostgresLabelStore`: human labels in PostgreSQL, beside the score rows of `PostgresSink`.

The table `scorewatch_labels` is created by the sink's migration 3 (`labels_migration`), so a
schema migrated by any scorewatch process has it. Labels are few next to scores: each call uses a
connection of its own rather than a pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from .labels import (
    LABEL_COLUMNS,
    LABEL_TABLE,
    SCORE_TABLE,
    Label,
    LabelledRun,
    ReviewCounts,
    RunRef,
    StoredRun,
    label_queries,
    label_table_sql,
    labelled_of,
    review_row,
    stored_run_of,
)
from .sql import quote

__all__ = ["PostgresLabelStore", "labels_migration"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def labels_migration(scores_table_sql: str) -> list[str]:
    """The labels table next to the qualified score table `scores_table_sql`."""
    schema_sql = scores_table_sql.rsplit(".", 1)[0]
    return label_table_sql(
        f"{schema_sql}.{quote(LABEL_TABLE)}",
        LABEL_TABLE,
        text="text",
        real="double precision",
        time="timestamptz",
    )


class PostgresLabelStore:
    """Labels in the PostgreSQL schema that holds the scores."""

    name = "postgres"

    def __init__(self, dsn: str, *, schema: str = "public", connect_timeout: float = 10.0) -> None:
        self._dsn = dsn
        self.schema = schema
        schema_sql = quote(schema)
        self._sql = label_queries(
            f"{schema_sql}.{quote(LABEL_TABLE)}", f"{schema_sql}.{quote(SCORE_TABLE)}", "%s"
        )
        self._connect_timeout = connect_timeout
        self._migrated = False

    async def _connect(self) -> Any:
        from psycopg import AsyncConnection

        if not self._migrated:
            from .postgres import PostgresSink

            await PostgresSink(self._dsn, schema=self.schema).migrate()
            self._migrated = True
        return await AsyncConnection.connect(
            self._dsn, autocommit=True, connect_timeout=int(max(1, self._connect_timeout))
        )

    async def put(self, labels: Sequence[Label]) -> None:
        """Upsert `labels` in one transaction (all or none)."""
        if not labels:
            return
        rows = []
        for label in labels:
            row = label.to_row()
            row["createdAt"] = row["updatedAt"] = label.created_at
            rows.append(tuple(row[c] for c in LABEL_COLUMNS))
        conn = await self._connect()
        try:
            async with conn.transaction(), conn.cursor() as cursor:
                await cursor.executemany(self._sql["upsert"].encode(), rows)
        finally:
            await conn.close()

    async def resolve(self, refs: Sequence[RunRef]) -> list[StoredRun | None]:
        """The stored run each reference names, or None where there is none."""
        conn = await self._connect()
        try:
            found: list[StoredRun | None] = []
            for ref in refs:
                if ref.run_id is not None:
                    cursor = await conn.execute(self._sql["by_id"].encode(), (ref.run_id,))
                else:
                    params = (ref.scorer_id, ref.target, ref.trace_id, ref.span_id)
                    cursor = await conn.execute(self._sql["by_trace"].encode(), params)
                row = await cursor.fetchone()
                found.append(None if row is None else stored_run_of(row))
            return found
        finally:
            await conn.close()

    async def labelled(self, scorer_id: str, *, since: datetime | None = None) -> list[LabelledRun]:
        """Every label of `scorer_id` (updated at or after `since`) with the judge's score."""
        conn = await self._connect()
        try:
            cursor = await conn.execute(
                self._sql["labelled"].encode(), (scorer_id, since or _EPOCH)
            )
            return [labelled_of(row) for row in await cursor.fetchall()]
        finally:
            await conn.close()

    async def review_pending(self, scorer_id: str, *, limit: int) -> list[dict[str, Any]]:
        """At most `limit` runs of `scorer_id` marked for review and not labelled, newest first."""
        conn = await self._connect()
        try:
            cursor = await conn.execute(self._sql["review_pending"].encode(), (scorer_id, limit))
            return [review_row(row, _as_is) for row in await cursor.fetchall()]
        finally:
            await conn.close()

    async def review_counts(self, scorer_id: str) -> ReviewCounts:
        """How many runs of `scorer_id` are marked for review, and how many are labelled."""
        conn = await self._connect()
        try:
            cursor = await conn.execute(self._sql["review_counts"].encode(), (scorer_id,))
            marked, labelled = await cursor.fetchone() or (0, 0)
            return ReviewCounts(int(marked), int(labelled))
        finally:
            await conn.close()

    async def aclose(self) -> None:
        return None


def _as_is(value: Any) -> Any:
    return value  # jsonb arrives decoded
