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

import os
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...core.verdict_cache import (
    MemoryVerdictCache,
    VerdictCache,
    VerdictCaching,
    install_verdict_caching,
)

if TYPE_CHECKING:
    from .file import ServeConfig

__all__ = ["CacheSettings", "install_configured_caching", "verdict_caching"]


class CacheSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(
        None, description="redis:// URL of a shared cache; none: in-process only."
    )
    url_env: str | None = Field(
        None, description="Environment variable holding that URL (keeps a password out)."
    )
    ttl_s: int = Field(86_400, ge=1, le=365 * 86_400, description="How long a verdict is kept.")
    max_bytes: int = Field(
        64 << 20, ge=1 << 16, le=1 << 34, description="Bound of the in-process cache."
    )
    prefix: str = Field("scorewatch:verdict:", min_length=1, description="Redis key prefix.")

    @field_validator("url")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        from .file import no_password

        return None if value is None else no_password(value, "[cache] url", "url_env")

    @model_validator(mode="after")
    def _one_url(self) -> CacheSettings:
        if self.url is not None and self.url_env is not None:
            raise ValueError("set [cache] url or url_env, not both")
        return self

    def resolved_url(self) -> str | None:
        if self.url_env is not None:
            value = os.environ.get(self.url_env)
            if not value:
                from .file import ConfigError

                raise ConfigError(f"[cache] url_env names {self.url_env!r}, which is not set")
            return value
        return self.url

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
