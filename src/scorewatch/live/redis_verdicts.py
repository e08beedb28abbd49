"""A verdict cache shared through Redis: every serve replica and worker that names the same
`[cache] url` reuses the others' verdicts (core/verdict_cache.py holds the interface).

Entries are plain strings under `PREFIX + key`, written with a TTL (`SET ... EX`), so Redis's own
eviction and expiry bound them. A client is made per event loop, as a redis-py asyncio client
belongs to the loop it first ran on. Errors propagate: the prompt step counts them as a miss.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Final

from ..core.verdict_cache import CachedVerdict

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["DEFAULT_PREFIX", "RedisVerdictCache"]

DEFAULT_PREFIX: Final = "scorewatch:verdict:"


class RedisVerdictCache:
    """Verdicts in Redis at `url`, each kept `ttl_s` seconds; calls give up after `timeout_s`."""

    def __init__(
        self,
        url: str,
        *,
        ttl_s: int = 86_400,
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 0.5,
    ) -> None:
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        self.url = url
        self.ttl_s = ttl_s
        self.prefix = prefix
        self.timeout_s = timeout_s
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Redis] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        # The URL may carry a password: never shown.
        return f"RedisVerdictCache(ttl_s={self.ttl_s}, prefix={self.prefix!r})"

    def _client(self) -> Redis:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            from redis.asyncio import Redis

            client = Redis.from_url(
                self.url,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.timeout_s,
            )
            self._clients[loop] = client
        return client

    async def get(self, key: str) -> CachedVerdict | None:
        raw = await self._client().get(self.prefix + key)
        return None if raw is None else CachedVerdict.from_json(raw)

    async def put(self, key: str, verdict: CachedVerdict) -> None:
        await self._client().set(self.prefix + key, verdict.to_json(), ex=self.ttl_s)

    async def aclose(self) -> None:
        """Close this loop's client."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
