"""`[cache]` in scorewatch.toml: which scorers reuse verdicts, and through what."""

from __future__ import annotations

from typing import Any

import pytest

from scorewatch.core import MemoryVerdictCache
from scorewatch.core.verdict_cache import current_verdict_caching, install_verdict_caching
from scorewatch.live.redis_verdicts import RedisVerdictCache
from scorewatch.server.config.cache_settings import install_configured_caching
from scorewatch.server.config.file import ConfigError, ServeConfig

pytestmark = pytest.mark.unit

SCORERS = [
    {"id": "cached", "factory": "json:dumps"},
    {"id": "fresh", "factory": "json:dumps", "cache": False},
]


def config(**tables: Any) -> ServeConfig:
    return ServeConfig.from_mapping({"scorers": SCORERS, **tables})


@pytest.fixture(autouse=True)
def restore() -> Any:
    previous = install_verdict_caching(None)
    yield
    install_verdict_caching(previous)


def test_without_a_cache_table_nothing_is_cached() -> None:
    assert install_configured_caching(config()) is None
    assert current_verdict_caching("cached") is None


def test_a_cache_table_caches_every_entry_but_those_that_opt_out() -> None:
    caching = install_configured_caching(config(cache={"max_bytes": 1 << 20}))
    assert caching is not None
    assert isinstance(caching.cache, MemoryVerdictCache)
    assert caching.cache.max_bytes == 1 << 20
    assert current_verdict_caching("cached") is caching
    assert current_verdict_caching("fresh") is None


def test_a_url_shares_the_cache_through_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SW_TEST_CACHE_URL", "redis://:hunter2@cache.invalid:6379/7")
    settings = {"url_env": "SW_TEST_CACHE_URL", "ttl_s": 60}
    caching = install_configured_caching(config(cache=settings))
    assert caching is not None
    assert isinstance(caching.cache, RedisVerdictCache)
    assert caching.cache.ttl_s == 60
    assert "hunter2" not in repr(caching)


def test_a_password_in_the_file_is_refused() -> None:
    with pytest.raises(ConfigError, match="password"):
        config(cache={"url": "redis://:hunter2@cache.invalid:6379/7"})


def test_an_unset_url_env_is_named() -> None:
    with pytest.raises(ConfigError, match="SW_TEST_NOT_SET"):
        install_configured_caching(config(cache={"url_env": "SW_TEST_NOT_SET"}))


def test_url_and_url_env_are_not_both_allowed() -> None:
    with pytest.raises(ConfigError, match="not both"):
        config(cache={"url": "redis://cache.invalid:6379/7", "url_env": "X"})
