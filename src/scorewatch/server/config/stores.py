"""Where results go and where `GET /v1/scores` reads them from.

`ResultReader` is what the read endpoint needs: the sinks' own `ScoreReader` (the PostgreSQL
sink when configured, shared by every replica; else the SQLite sink). `SinkProbe` is what
`/readyz` asks: can a result be written now?

The PostgreSQL sink's pool belongs to the event loop that first used it, and serve writes on its
scoring loop while it reads on the HTTP loop: reading and readiness get a sink object (and pool)
of their own, `Stores.readers`, closed by the service on the HTTP loop.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ...sinks.base import ScoreReader, ScoreSink
from ...sinks.jsonl import JsonlSink
from ...sinks.sqlite import SERVICE_LINGER_S, SqliteSink
from .file import ServeConfig

__all__ = ["AnswerProbe", "ResultReader", "SinkProbe", "SqliteProbe", "Stores", "build_stores"]

logger = logging.getLogger("scorewatch.server")


ResultReader = ScoreReader
"""What `GET /v1/scores` reads from: a sink that reads its own rows back (`ScoreReader`)."""


class SinkProbe(Protocol):
    name: str

    async def writable(self) -> bool: ...


class AnswerProbe:
    """Ready when a service answers `ask()` within `timeout`; a failure is logged as `failure`
    with the error's type (never its message, which may hold a DSN)."""

    def __init__(
        self, name: str, ask: Callable[[], Awaitable[object]], failure: str, timeout: float = 2.0
    ) -> None:
        self.name = name
        self._ask = ask
        self._failure = failure
        self._timeout = timeout

    async def writable(self) -> bool:
        try:
            await asyncio.wait_for(self._ask(), self._timeout)
        except Exception as error:
            logger.warning("%s (%s)", self._failure, type(error).__name__)
            return False
        return True


class SqliteProbe:
    """Takes and releases the database's write lock: fails when the file cannot be written or
    another writer holds the lock longer than `timeout`."""

    name = "sqlite"

    def __init__(self, path: Path, timeout: float = 1.0) -> None:
        self._path = path
        self._timeout = timeout

    def _probe(self) -> bool:
        try:
            conn = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error:
            return False
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return True
        except sqlite3.Error:
            return False
        finally:
            conn.close()

    async def writable(self) -> bool:
        return await asyncio.to_thread(self._probe)


class JsonlProbe:
    name = "jsonl"

    def __init__(self, path: Path) -> None:
        self._path = path

    def _probe(self) -> bool:
        try:
            with self._path.open("a", encoding="utf-8"):
                return True
        except OSError:
            return False

    async def writable(self) -> bool:
        return await asyncio.to_thread(self._probe)


@dataclass(frozen=True, slots=True)
class Stores:
    sinks: Sequence[ScoreSink]
    reader: ResultReader | None
    probes: Sequence[SinkProbe]
    # Sink objects only read through (not in `sinks`): whoever reads closes them.
    readers: Sequence[ScoreSink] = ()


def build_stores(config: ServeConfig) -> Stores:
    """The sinks of `[sinks]`, the reader of `GET /v1/scores` and the readiness probes."""
    sinks: list[ScoreSink] = []
    readers: list[ScoreSink] = []
    probes: list[SinkProbe] = []
    reader: ResultReader | None = None
    settings = config.sinks
    if settings.sqlite is not False:
        path = config.resolve_path(settings.sqlite)
        # The loop that runs a model-free run stores it too (serve's scoring loop): no writer
        # thread to hand each batch to (BENCHMARKS.md).
        sqlite = SqliteSink(
            path,
            synchronous=settings.sqlite_synchronous,
            linger=SERVICE_LINGER_S,
            on_caller_loop=True,
        )
        sinks.append(sqlite)
        probes.append(SqliteProbe(path))
        reader = sqlite
    if settings.jsonl is not None:
        path = config.resolve_path(settings.jsonl)
        sinks.append(JsonlSink(path))
        probes.append(JsonlProbe(path))
    dsn = settings.postgres_dsn()
    if dsn is not None:
        # Shared by every replica and worker: when configured, it is what GET /v1/scores reads.
        from ...sinks.postgres import PostgresSink

        sinks.append(PostgresSink(dsn, schema=settings.postgres_schema))
        reading = PostgresSink(dsn, schema=settings.postgres_schema, max_size=4)
        readers.append(reading)
        probes.append(
            AnswerProbe("postgres", lambda: reading.aquery(limit=1), "PostgreSQL sink not ready")
        )
        reader = reading
    return Stores(sinks, reader, probes, readers)
