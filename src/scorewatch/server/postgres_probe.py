"""`/readyz` for the PostgreSQL sink: can a row be read from its table right now?"""

from __future__ import annotations

import asyncio
import logging

from ..sinks.postgres import PostgresSink

__all__ = ["PostgresProbe"]

logger = logging.getLogger("scorewatch.server")


class PostgresProbe:
    name = "postgres"

    def __init__(self, sink: PostgresSink, timeout: float = 2.0) -> None:
        self._sink = sink
        self._timeout = timeout

    async def writable(self) -> bool:
        try:
            await asyncio.wait_for(self._sink.aquery(limit=1), self._timeout)
        except Exception as error:
            logger.warning("PostgreSQL sink not ready (%s)", type(error).__name__)
            return False
        return True
