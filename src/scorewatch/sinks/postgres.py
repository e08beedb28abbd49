"""`PostgresSink`: score records as rows in PostgreSQL, shared by every replica and worker.

The rows are `SqliteSink`'s (the reference system's `mastra_scorers` columns, camelCase, plus
target, status, judge records and failure fields), with PostgreSQL types: JSON columns are
`jsonb`, `createdAt`/`updatedAt` are `timestamptz`. Writes upsert on the deterministic run id,
so a run delivered twice (a queue redelivery) leaves one row.

The sink creates its table itself through numbered migrations recorded in
`scorewatch_migrations`; each runs once, under a transaction-scoped advisory lock, so many
workers starting at once neither race nor repeat one.

Needs the `scale` extra (`psycopg[binary]`, `psycopg-pool`). Connections come from an async pool
opened lazily on the first event loop that uses the sink; a call from another loop (a sync
wrapper, a test) uses a connection of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Unpack

from .base import RowsRefusedError, RunQuery
from .postgres_labels import labels_migration
from .record import SCORE_COLUMNS, TIME_COLUMNS, ScoreRecord, decode_row, encode_row, iso_timestamp
from .sql import (
    create_table_sql,
    filter_conditions,
    quote,
    review_index_sql,
    select_sql,
    upsert_sql,
)
from .storable import stored_json

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["MIGRATIONS", "PostgresSink", "RunQuery"]


_TYPES: Final[dict[str, str]] = {
    "id": "text PRIMARY KEY",
    "scorerId": "text NOT NULL",
    "runId": "text NOT NULL",
    "score": "double precision",
    "source": "text NOT NULL",
    "structuredOutput": "boolean",
    "createdAt": "timestamptz NOT NULL",
    "updatedAt": "timestamptz NOT NULL",
    "status": "text NOT NULL",
    "reviewSampled": "boolean",
}
_TABLE: Final = "mastra_scorers"
_MIGRATIONS_TABLE: Final = "scorewatch_migrations"


def _create_table(table: str) -> list[str]:
    return create_table_sql(table, _TABLE, _TYPES, text_type="text", json_type="jsonb")


def _add_scorer_version(table: str) -> list[str]:
    # A table migration 1 made today has the column already (it creates every column).
    return [f'ALTER TABLE {table} ADD COLUMN IF NOT EXISTS "scorerVersion" text']


def _add_review_mark(table: str) -> list[str]:
    # Migration 1 made today has the column already; the partial index is new either way.
    return [
        f'ALTER TABLE {table} ADD COLUMN IF NOT EXISTS "reviewSampled" boolean',
        review_index_sql(table, _TABLE),
    ]


# (version, description, statements for a qualified table name). Append only; never edit one
# that has shipped.
MIGRATIONS: Final = (
    (1, "score rows (mastra_scorers) and their indexes", _create_table),
    (2, "the scorer version of each score row (scorerVersion)", _add_scorer_version),
    (3, "human labels of scored runs (scorewatch_labels)", labels_migration),
    (4, "the runs marked for human review (reviewSampled) and their index", _add_review_mark),
)


class PostgresSink:
    name = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "public",
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 10.0,
        acquire_timeout: float = 3.0,
    ) -> None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise ImportError(
                "PostgresSink needs psycopg and psycopg-pool: install the scale extra "
                "(pip install -e '.[scale]' in a scorewatch checkout)"
            ) from error
        self._dsn = dsn
        self.schema = schema
        self._schema_sql = quote(schema)
        self._table_sql = f"{self._schema_sql}.{quote(_TABLE)}"
        self._min_size = min_size
        self._max_size = max_size
        self._connect_timeout = connect_timeout
        # A read or write waits this long for a connection: while the database is down,
        # GET /v1/scores answers 503 quickly and a writer's retry budget stays what it says.
        self._acquire_timeout = acquire_timeout
        self._pool: AsyncConnectionPool[Any] | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._ready_loops: set[int] = set()
        self._migrated = False
        self._open_lock: asyncio.Lock | None = None
        self._closed = False
        self._upsert_sql = upsert_sql(self._table_sql, "%s")

    # -- connections -------------------------------------------------------------------------

    async def _connection_pool(self) -> AsyncConnectionPool[Any] | None:
        """The pool when called on the loop that owns it (opening it on first use), else None."""
        if self._closed:
            raise RuntimeError("the sink is closed")
        loop = asyncio.get_running_loop()
        if self._pool is not None:
            return self._pool if self._pool_loop is loop else None
        if self._pool_loop is not None and self._pool_loop is not loop:
            return None
        if self._open_lock is None:
            self._pool_loop = loop
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._pool is None:
                from psycopg_pool import AsyncConnectionPool

                await self._migrate_once()
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self._dsn,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    open=False,
                    timeout=self._connect_timeout,
                    kwargs={"autocommit": True},
                    name="scorewatch-postgres-sink",
                )
                await pool.open(wait=False)
                self._pool = pool
        return self._pool

    async def _connect(self) -> AsyncConnection[Any]:
        from psycopg import AsyncConnection

        return await AsyncConnection.connect(
            self._dsn, autocommit=True, connect_timeout=int(max(1, self._connect_timeout))
        )

    async def _migrate_once(self) -> None:
        if self._migrated:
            return
        connection = await self._connect()
        try:
            await self.migrate(connection)
        finally:
            await connection.close()
        self._migrated = True

    async def migrate(self, connection: AsyncConnection[Any] | None = None) -> list[int]:
        """Apply the migrations this database lacks; returns the versions applied now."""
        own = connection is None
        conn = connection if connection is not None else await self._connect()
        applied_now: list[int] = []
        migrations_sql = f"{self._schema_sql}.{quote(_MIGRATIONS_TABLE)}"
        try:
            async with conn.transaction():
                # One migrating process at a time per schema; the lock ends with the transaction.
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))",
                    (f"scorewatch-migrations:{self.schema}",),
                )
                # Only when missing: CREATE SCHEMA IF NOT EXISTS needs the database's CREATE
                # privilege even for an existing schema, which an application role may lack.
                found = await conn.execute(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
                )
                if await found.fetchone() is None:
                    await conn.execute(f"CREATE SCHEMA {self._schema_sql}".encode())
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {migrations_sql} (version integer PRIMARY KEY, "
                    "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                cursor = await conn.execute(f"SELECT version FROM {migrations_sql}")
                done = {int(row[0]) for row in await cursor.fetchall()}
                for version, description, statements in MIGRATIONS:
                    if version in done:
                        continue
                    for statement in statements(self._table_sql):
                        await conn.execute(statement.encode())
                    await conn.execute(
                        f"INSERT INTO {migrations_sql} (version, description) VALUES (%s, %s)",
                        (version, description),
                    )
                    applied_now.append(version)
        finally:
            if own:
                await conn.close()
        return applied_now

    # -- sink protocol -----------------------------------------------------------------------

    def _encode(self, result: ScoreRecord) -> tuple[Any, ...]:
        from psycopg.types.json import Jsonb

        # Timestamps go in as the result's own datetime (timestamptz), not the row's ISO text,
        # at the row's millisecond precision: what a reader sees is what it can page by.
        moment = result.created_at
        moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
        created_at = dict.fromkeys(TIME_COLUMNS, lambda _text: moment)
        # JSON is serialized here, where `_encode` runs (off the event loop), not later while
        # psycopg sends the row.
        return encode_row(
            result.to_row(),
            dumps=stored_json,
            as_json=lambda value: Jsonb(stored_json(value), dumps=_as_is),
            convert=created_at,
        )

    def _encode_all(
        self, results: Sequence[ScoreRecord]
    ) -> tuple[list[tuple[ScoreRecord, tuple[Any, ...]]], list[tuple[ScoreRecord, BaseException]]]:
        rows: list[tuple[ScoreRecord, tuple[Any, ...]]] = []
        refused: list[tuple[ScoreRecord, BaseException]] = []
        for result in results:
            try:
                rows.append((result, self._encode(result)))
            except Exception as error:  # this row cannot be written, whatever the database
                refused.append((result, error))
        return rows, refused

    async def write(self, results: Sequence[ScoreRecord]) -> None:
        """Upsert `results` in one transaction; when PostgreSQL refuses that for a reason of
        the rows (a value or constraint, not an outage), row by row, so that only the bad rows
        are refused (`RowsRefusedError`)."""
        if not results:
            return
        # Rows of megabytes take milliseconds to serialize: not on the caller's event loop.
        rows, refused = await asyncio.to_thread(self._encode_all, results)
        if rows:
            pool = await self._connection_pool()
            if pool is not None:
                async with pool.connection(timeout=self._acquire_timeout) as conn:
                    await self._store_rows(conn, rows, refused)
            else:
                await self._migrate_once()
                conn = await self._connect()
                try:
                    await self._store_rows(conn, rows, refused)
                finally:
                    await conn.close()
        if refused:
            raise RowsRefusedError(refused)

    async def _store_rows(
        self,
        conn: AsyncConnection[Any],
        rows: list[tuple[ScoreRecord, tuple[Any, ...]]],
        refused: list[tuple[ScoreRecord, BaseException]],
    ) -> None:
        try:
            await self._store(conn, [row for _result, row in rows])
            return
        except Exception as error:
            if not _refuses(error):
                raise
            if len(rows) == 1:
                refused.append((rows[0][0], error))
                return
        for result, row in rows:
            try:
                await self._store(conn, [row])
            except Exception as error:
                if not _refuses(error):
                    raise
                refused.append((result, error))

    async def _store(self, conn: AsyncConnection[Any], rows: list[tuple[Any, ...]]) -> None:
        async with conn.transaction(), conn.cursor() as cursor:
            await cursor.executemany(self._upsert_sql.encode(), rows)

    async def aclose(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # -- reading -----------------------------------------------------------------------------

    async def aquery(self, **query: Unpack[RunQuery]) -> list[dict[str, Any]]:
        """Stored rows, newest first, as `SqliteSink.query` returns them (timestamps as ISO
        text). Filters: `ScoreQuery`, and `ids` keeps only these run ids."""
        sql, params = self._select(query)
        pool = await self._connection_pool()
        if pool is not None:
            async with pool.connection(timeout=self._acquire_timeout) as conn:
                return await self._fetch(conn, sql, params)
        return await self._fetch_direct(sql, params)

    def query(self, **query: Unpack[RunQuery]) -> list[dict[str, Any]]:
        """`aquery` for synchronous callers (not from inside a running event loop); uses a
        connection of its own, never the pool."""
        return asyncio.run(self._fetch_direct(*self._select(query)))

    def _select(self, query: RunQuery) -> tuple[str, list[Any]]:
        since, until = (_as_datetime(query.get(bound)) for bound in ("since", "until"))
        conditions = filter_conditions(query, since, RunQuery.__optional_keys__, until=until)
        ids = query.get("ids")
        if ids is not None:
            conditions.append(("id", "= ANY({})", list(ids)))
        after = query.get("after")
        if after is not None and (query.get("order") or "newest") == "newest":
            after = (_as_datetime(after[0]), after[1])
        return select_sql(
            self._table_sql, "%s", conditions, query.get("limit"), query.get("order"), after
        )

    async def _fetch_direct(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        await self._migrate_once()
        conn = await self._connect()
        try:
            return await self._fetch(conn, sql, params)
        finally:
            await conn.close()

    async def _fetch(
        self, conn: AsyncConnection[Any], sql: str, params: list[Any]
    ) -> list[dict[str, Any]]:
        cursor = await conn.execute(sql.encode(), params)
        return [decode_row(SCORE_COLUMNS, row, _DECODE) for row in await cursor.fetchall()]


def _as_is(text: Any) -> str:
    return str(text)


def _refuses(error: Exception) -> bool:
    """A value PostgreSQL will not take (class 22) or a constraint the row breaks (class 23),
    or an error turning the row into parameters: about the row. Connection trouble, a missing
    table, a full disk: about the database."""
    import psycopg

    if isinstance(error, psycopg.DataError | psycopg.IntegrityError):
        return True
    return not isinstance(error, psycopg.Error | OSError | MemoryError)


def _as_datetime(value: Any) -> Any:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _iso_text(value: Any) -> Any:
    return iso_timestamp(value) if isinstance(value, datetime) else value


# jsonb comes back decoded already; only the timestamps go back to the rows' ISO text.
_DECODE: Final = dict.fromkeys(TIME_COLUMNS, _iso_text)
