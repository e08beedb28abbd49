"""The Redis-backed verdict cache, against the real Redis of the test environment."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis

import scorewatch as sw
from core_support import judge_config
from scale_support import REDIS_URL, require_redis, unique_prefix
from scorewatch.core import CachedVerdict, caching_verdicts
from scorewatch.judge import JudgeReply
from scorewatch.live.redis_verdicts import RedisVerdictCache
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.integration


@pytest.fixture
def prefix() -> Iterator[str]:
    require_redis()
    chosen = f"{unique_prefix()}:verdict:"
    yield chosen
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{chosen}*"))
    if keys:
        client.delete(*keys)
    client.close()


def scorer(judge: ScriptedJudge) -> sw.Scorer:
    return sw.create_scorer(id="shared", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("Score it", lambda ctx: f"score {ctx.run.output}")
    )


async def test_two_processes_share_verdicts_with_a_ttl(prefix: str) -> None:
    judge = ScriptedJudge(lambda r: JudgeReply('{"score": 0.9}', estimated_cost_usd=0.5))
    first, second = (RedisVerdictCache(REDIS_URL, ttl_s=60, prefix=prefix) for _ in range(2))
    try:
        with caching_verdicts(first):
            await scorer(judge).run(output="o")
        with caching_verdicts(second):  # another replica's cache object, the same Redis
            result = await scorer(judge).run(output="o")
    finally:
        await first.aclose()
        await second.aclose()
    assert judge.calls == 1
    execution = result.judge["generate_score"].executions[0]  # type: ignore[index]
    assert execution.cached is True and execution.saved_cost_usd == 0.5
    client = redis.Redis.from_url(REDIS_URL)
    (key,) = list(client.scan_iter(match=f"{prefix}*"))
    assert 0 < client.ttl(key) <= 60
    client.close()


async def test_entries_expire(prefix: str) -> None:
    cache = RedisVerdictCache(REDIS_URL, ttl_s=1, prefix=prefix)
    try:
        await cache.put("k", CachedVerdict("x", cost_usd=0.1))
        assert await cache.get("k") == CachedVerdict("x", cost_usd=0.1)
        await asyncio.sleep(2.1)
        assert await cache.get("k") is None
    finally:
        await cache.aclose()


async def test_an_unreachable_redis_is_a_miss_not_a_failure() -> None:
    judge = ScriptedJudge(lambda r: JudgeReply('{"score": 0.9}'))
    cache = RedisVerdictCache("redis://127.0.0.1:1/0", timeout_s=0.2)
    with caching_verdicts(cache):
        assert (await scorer(judge).run(output="o")).score == 0.9
        assert (await scorer(judge).run(output="o")).score == 0.9
    assert judge.calls == 2
    assert "127.0.0.1:1" not in repr(cache)
