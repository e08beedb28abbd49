"""Are the services the configuration names (Redis, PostgreSQL) reachable right now?

`scorewatch serve --check` and `scorewatch worker` ask before they go on, and say in one line
which dependency is unreachable and why (the first line of the client's error, with no
password), instead of a traceback from deep inside a client library.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ...errors import ScorewatchError
from ...sinks.storable import redact_url_credentials
from ..config.file import ServeConfig, queue_url
from ..config.process_logging import escape_controls

__all__ = ["DependencyUnavailableError", "require_dependencies", "unreachable_dependencies"]

_CHECK_TIMEOUT_S = 5.0


class DependencyUnavailableError(ScorewatchError):
    """A configured dependency (Redis, PostgreSQL) cannot be reached; the message is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="DEPENDENCY_UNREACHABLE", domain="SERVER", category="SYSTEM")


async def _ping_redis(url: str, timeout: float) -> None:  # noqa: ASYNC109 - a client setting
    from .stream import connect

    client = connect(url, max_connections=1, timeout=timeout)
    try:
        await client.ping()
    finally:
        await client.aclose()


def _postgres_target(dsn: str) -> str:
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:
        return "PostgreSQL"
    shown = " ".join(f"{key}={parts[key]}" for key in ("host", "port", "dbname") if parts.get(key))
    return f"PostgreSQL ({shown})" if shown else "PostgreSQL"


async def _ping_postgres(dsn: str, timeout: float) -> None:  # noqa: ASYNC109 - a client setting
    from psycopg import AsyncConnection

    connection = await AsyncConnection.connect(dsn, connect_timeout=max(1, int(timeout)))
    try:
        await connection.execute("SELECT 1")
    finally:
        await connection.close()


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return (
        escape_controls(f"{type(error).__name__}: {first}"[:300]) if first else type(error).__name__
    )


async def unreachable_dependencies(config: ServeConfig) -> list[str]:
    """One `<dependency> <where>: <why>` per configured dependency that cannot be reached."""
    checks: list[tuple[str, Callable[[], Awaitable[None]]]] = []
    url = queue_url(config)
    if url is not None:
        timeout = min(config.queue.timeout, _CHECK_TIMEOUT_S)
        checks.append(
            (f"Redis at {redact_url_credentials(url)}", lambda: _ping_redis(url, timeout))
        )
    dsn = config.sinks.postgres_dsn()
    if dsn is not None:
        checks.append((_postgres_target(dsn), lambda: _ping_postgres(dsn, _CHECK_TIMEOUT_S)))

    async def probe(name: str, check: Callable[[], Awaitable[None]]) -> str | None:
        try:
            await asyncio.wait_for(check(), _CHECK_TIMEOUT_S + 1)
        except Exception as error:
            return f"{name} is unreachable ({_reason(error)})"
        return None

    found = await asyncio.gather(*(probe(name, check) for name, check in checks))
    return [problem for problem in found if problem is not None]


def require_dependencies(config: ServeConfig) -> None:
    """Raise `DependencyUnavailableError` (one line naming each unreachable one) unless every
    configured dependency answers."""
    problems = asyncio.run(unreachable_dependencies(config))
    if problems:
        raise DependencyUnavailableError("; ".join(problems))
