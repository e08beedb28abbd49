"""The Redis and PostgreSQL databases the tests and benchmarks may use, and no others.

Both are named by the environment, with defaults of scorewatch's own:

- `SCOREWATCH_TEST_REDIS_URL` (default `redis://127.0.0.1:6379/9`): the Redis database; stream
  keys inside it are per run (`swtest-...`) and deleted afterwards;
- `SCOREWATCH_TEST_PG_DSN` (default `host=127.0.0.1 port=5432 dbname=scorewatch_test
  user=postgres`): the PostgreSQL database, created when missing; tables live in a schema per
  test, dropped afterwards.

The databases a machine already has (Redis database 0, PostgreSQL's `test`) belong to others:
nothing here falls back to them. Every address a test or benchmark builds for these services
(through a proxy, on a port where nothing listens) comes from `redis_url` and `pg_dsn`, so it
keeps the database the environment names. Plain Python: benchmarks/ imports this file too.
"""

from __future__ import annotations

import contextlib
import os
import re
from urllib.parse import urlsplit

__all__ = [
    "PG_DATABASE",
    "PG_DSN",
    "PG_HOST",
    "PG_PORT",
    "REDIS_DB",
    "REDIS_HOST",
    "REDIS_PORT",
    "REDIS_URL",
    "ensure_pg_database",
    "pg_dsn",
    "redis_url",
]

REDIS_URL_ENV = "SCOREWATCH_TEST_REDIS_URL"
PG_DSN_ENV = "SCOREWATCH_TEST_PG_DSN"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/9"
DEFAULT_PG_DSN = "host=127.0.0.1 port=5432 dbname=scorewatch_test user=postgres"

REDIS_URL = os.environ.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL
PG_DSN = os.environ.get(PG_DSN_ENV) or DEFAULT_PG_DSN

_redis = urlsplit(REDIS_URL)
REDIS_HOST = _redis.hostname or "127.0.0.1"
REDIS_PORT = _redis.port or 6379
REDIS_DB = int(_redis.path.strip("/") or 0)

_PG_FIELD = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def _pg_fields(dsn: str) -> dict[str, str]:
    """The `key=value` fields of a libpq keyword DSN (the form these tests use)."""
    if "://" in dsn:
        raise ValueError(f"{PG_DSN_ENV} must be a keyword DSN ('host=... dbname=...'), got a URL")
    return {key: value.strip("'") for key, value in _PG_FIELD.findall(dsn)}


_pg = _pg_fields(PG_DSN)
PG_HOST = _pg.get("host", "127.0.0.1")
PG_PORT = int(_pg.get("port", "5432"))
PG_DATABASE = _pg.get("dbname", "")
if not PG_DATABASE:
    raise ValueError(f"{PG_DSN_ENV} must name its database (dbname=...): {PG_DSN!r}")


def redis_url(*, port: int | None = None, host: str | None = None) -> str:
    """The test Redis database's URL, optionally at another address (a proxy, a dead port)."""
    netloc = _redis.netloc
    if port is not None or host is not None:
        credentials = netloc.rpartition("@")[0]
        address = f"{host or REDIS_HOST}:{port if port is not None else REDIS_PORT}"
        netloc = f"{credentials}@{address}" if credentials else address
    return f"{_redis.scheme}://{netloc}/{REDIS_DB}"


def pg_dsn(*, port: int | None = None, **fields: str) -> str:
    """The test PostgreSQL DSN, optionally at another port or with other fields (user, ...)."""
    merged = {**_pg, **fields}
    if port is not None:
        merged["port"] = str(port)
    return " ".join(f"{key}={value}" for key, value in merged.items())


def ensure_pg_database() -> None:
    """Create the test database when it does not exist yet (connecting to the server's
    `postgres` maintenance database only for that)."""
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(PG_DSN, connect_timeout=5):
            return
    except psycopg.OperationalError as error:
        if "does not exist" not in str(error):
            raise
    # Another test process may create it at the same moment: either error says it exists.
    exists = (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation)
    with (
        psycopg.connect(pg_dsn(dbname="postgres"), autocommit=True, connect_timeout=5) as conn,
        contextlib.suppress(*exists),
    ):
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(PG_DATABASE)))
