"""`[cache]`: the verdict cache of `scorewatch serve` and `scorewatch worker`.

Without the table live scoring judges every sampled call (the default: off). With it, every
`[[scorers]]` entry reuses verdicts unless it says `cache = false`: in process (an LRU of
`max_bytes`), or shared by every replica and worker through Redis when `url` (or `url_env`) names
one, each entry kept `ttl_s` seconds.

```toml
[cache]
url_env = "SCOREWATCH_CACHE_URL"   # shared through Redis; leave out for in-process only
ttl_s = 86400
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ...core.verdict_cache import (
    MemoryVerdictCache,
    VerdictCache,
    VerdictCaching,
    install_verdict_caching,
)
from .redis_url import RedisUrlTable

if TYPE_CHECKING:
    from .file import ServeConfig

__all__ = ["CacheSettings", "install_configured_caching", "verdict_caching"]


class CacheSettings(RedisUrlTable):
    TABLE = "[cache]"

    ttl_s: int = Field(86_400, ge=1, le=365 * 86_400, description="How long a verdict is kept.")
    max_bytes: int = Field(
        64 << 20, ge=1 << 16, le=1 << 34, description="Bound of the in-process cache."
    )
    prefix: str = Field("scorewatch:verdict:", min_length=1, description="Redis key prefix.")

    def build(self) -> VerdictCache:
        url = self.resolved_url()
        if url is None:
            return MemoryVerdictCache(self.max_bytes)
        from ...live.redis_verdicts import RedisVerdictCache

        return RedisVerdictCache(url, ttl_s=self.ttl_s, prefix=self.prefix)


def verdict_caching(settings: CacheSettings | None, cached_ids: list[str]) -> VerdictCaching | None:
    """The caching live scoring installs: none without `[cache]`, else for `cached_ids`."""
    if settings is None or not cached_ids:
        return None
    return VerdictCaching(settings.build(), frozenset(cached_ids))


def install_configured_caching(config: ServeConfig) -> VerdictCaching | None:
    """Make the configuration's verdict caching the process's (core/verdict_cache.py), or none;
    `[[scorers]]` entries with `cache = false` are left out."""
    caching = verdict_caching(config.cache, [entry.id for entry in config.scorers if entry.cache])
    install_verdict_caching(caching)
    return caching
