"""The verdict cache: identical judge requests reuse the earlier answer, recorded honestly, and
never across scorer versions, models or failures."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import scorewatch as sw
from core_support import executions, judge_config, observing, wire
from scorewatch.core import (
    CachedVerdict,
    JudgeCacheLookup,
    MemoryVerdictCache,
    caching_verdicts,
    not_caching_verdicts,
)
from scorewatch.core.records import judge_cost_usd
from scorewatch.core.verdict_cache import VerdictCaching, install_verdict_caching, verdict_key
from scorewatch.judge import JudgeProviderError, JudgeReply, JudgeRequest, JudgeUsage
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

USAGE = JudgeUsage(input_tokens=10, output_tokens=20, total_tokens=30)


def paid(text: str, cost: float = 0.01) -> JudgeReply:
    return JudgeReply(text=text, usage=USAGE, estimated_cost_usd=cost)


def always(text: str, cost: float = 0.01) -> Any:
    return lambda request: paid(text, cost)


def scorer(judge: Any, *, prompt: str = "score {output}", version: str | None = None) -> sw.Scorer:
    return sw.create_scorer(
        id="cached", description="d", judge=judge_config(judge), version=version
    ).generate_score(sw.PromptStep("Score it", lambda ctx: prompt.format(output=ctx.run.output)))


def record(result: sw.ScorerRunResult) -> dict[str, Any]:
    found = executions(wire(result), "generateScore")
    assert len(found) == 1
    return found[0]


async def test_an_identical_request_reuses_the_answer_and_says_so() -> None:
    judge = ScriptedJudge(always('{"score": 0.7}', cost=0.25))
    cache = MemoryVerdictCache()
    with caching_verdicts(cache):
        first = await scorer(judge).run(output="o")
        second = await scorer(judge).run(output="o")
    assert judge.calls == 1
    assert second.score == first.score == 0.7
    fresh, reused = record(first), record(second)
    assert "cached" not in fresh and "savedCostUsd" not in fresh
    assert fresh["estimatedCostUsd"] == 0.25
    assert reused["cached"] is True
    assert reused["savedCostUsd"] == 0.25
    assert reused["estimatedCostUsd"] == 0.0
    assert reused["modelCallCount"] == 0
    assert reused["usage"] == {}
    assert judge_cost_usd(second.judge) == 0.0


async def test_another_input_is_a_miss() -> None:
    judge = ScriptedJudge(always('{"score": 0.5}'))
    with caching_verdicts(MemoryVerdictCache()):
        await scorer(judge).run(output="a")
        await scorer(judge).run(output="b")
    assert judge.calls == 2


async def test_a_new_scorer_version_is_never_served_the_old_answer() -> None:
    judge = ScriptedJudge(always('{"score": 0.5}'))
    with caching_verdicts(MemoryVerdictCache()):
        await scorer(judge, version="1").run(output="o")
        await scorer(judge, version="2").run(output="o")
        await scorer(judge, prompt="rate {output}").run(output="o")
        await scorer(judge, version="1").run(output="o")
    assert judge.calls == 3


async def test_another_model_is_never_served_the_answer() -> None:
    one = ScriptedJudge(always('{"score": 0.1}'), model_id="model-a")
    two = ScriptedJudge(always('{"score": 0.9}'), model_id="model-b")
    with caching_verdicts(MemoryVerdictCache()):
        a = await scorer(one).run(output="o")
        b = await scorer(two).run(output="o")
    assert (one.calls, two.calls) == (1, 1)
    assert (a.score, b.score) == (0.1, 0.9)


def test_the_key_names_the_model_even_under_one_version() -> None:
    request = JudgeRequest(prompt="p", instructions="i", step="generate_score")
    keys = {
        verdict_key("v1", ScriptedJudge([], model_id="a"), request),
        verdict_key("v1", ScriptedJudge([], model_id="b"), request),
        verdict_key("v1", ScriptedJudge([], model_id="a", provider="other"), request),
        verdict_key("v2", ScriptedJudge([], model_id="a"), request),
        verdict_key("v1", ScriptedJudge([], model_id="a"), replace(request, prompt="p2")),
    }
    assert len(keys) == 5


async def test_a_failed_attempt_is_never_served() -> None:
    judge = ScriptedJudge([JudgeProviderError("down"), paid('{"score": 0.4}')])
    with caching_verdicts(MemoryVerdictCache()):
        with pytest.raises(sw.ScorerRunError):
            await scorer(judge).run(output="o")
        result = await scorer(judge).run(output="o")
    assert judge.calls == 2
    assert "cached" not in record(result)


async def test_an_answer_that_did_not_validate_is_never_stored() -> None:
    # Both the answer and its structured-output fallback are unusable: the step fails.
    judge = ScriptedJudge(["not json", "still not json", paid('{"score": 0.3}')])
    cache = MemoryVerdictCache()
    with caching_verdicts(cache):
        with pytest.raises(sw.ScorerRunError):
            await scorer(judge).run(output="o")
        assert len(cache) == 0
        result = await scorer(judge).run(output="o")
    assert judge.calls == 3
    assert result.score == 0.3


async def test_a_stored_answer_that_no_longer_validates_is_a_miss() -> None:
    judge = ScriptedJudge(always('{"score": 0.6}'))
    cache = MemoryVerdictCache()
    target = scorer(judge)
    request = JudgeRequest(
        prompt="score o",
        instructions=target.steps[0].judge.instructions,  # type: ignore[union-attr]
        step="generate_score",
        schema=target.steps[0].schema,
        json_prompt_injection=target.steps[0].judge.json_prompt_injection,  # type: ignore[union-attr]
    )
    await cache.put(verdict_key(target.version_fingerprint, judge, request), CachedVerdict("{"))
    with caching_verdicts(cache):
        result = await target.run(output="o")
    assert judge.calls == 1
    assert result.score == 0.6
    assert "cached" not in record(result)


async def test_a_failing_cache_never_fails_the_scorer() -> None:
    class Broken:
        async def get(self, key: str) -> CachedVerdict | None:
            raise ConnectionError("cache down")

        async def put(self, key: str, verdict: CachedVerdict) -> None:
            raise ConnectionError("cache down")

    judge = ScriptedJudge(always('{"score": 0.8}'))
    with caching_verdicts(Broken()):
        assert (await scorer(judge).run(output="o")).score == 0.8
        assert (await scorer(judge).run(output="o")).score == 0.8
    assert judge.calls == 2


async def test_caching_is_off_by_default_outside_and_under_not_caching() -> None:
    judge = ScriptedJudge(always('{"score": 0.5}'))
    cache = MemoryVerdictCache()
    await scorer(judge).run(output="o")
    with caching_verdicts(cache):
        await scorer(judge).run(output="o")
        with not_caching_verdicts():
            await scorer(judge).run(output="o")
        await scorer(judge).run(output="o")
    await scorer(judge).run(output="o")
    assert judge.calls == 4


async def test_caching_may_serve_some_scorers_only() -> None:
    judge = ScriptedJudge(always('{"score": 0.5}'))
    with caching_verdicts(MemoryVerdictCache(), scorers={"someone-else"}):
        await scorer(judge).run(output="o")
        await scorer(judge).run(output="o")
    assert judge.calls == 2


async def test_the_event_bus_hears_every_lookup_as_the_record_says() -> None:
    judge = ScriptedJudge(always('{"score": 0.5}', cost=0.125))
    with observing() as observer, caching_verdicts(MemoryVerdictCache()):
        await scorer(judge).run(output="o")
        second = await scorer(judge).run(output="o")
    first_run, second_run = observer.listeners
    (miss,) = first_run.payloads("judge_cache_lookup")
    (hit,) = second_run.payloads("judge_cache_lookup")
    assert miss == JudgeCacheLookup("generate_score", "scripted-judge", "scripted", False, None)
    assert hit == JudgeCacheLookup("generate_score", "scripted-judge", "scripted", True, 0.125)
    assert hit.saved_cost_usd == record(second)["savedCostUsd"]
    # A reused answer made no judge attempt.
    assert second_run.payloads("judge_attempt_started") == []


async def test_the_lru_holds_its_byte_bound() -> None:
    cache = MemoryVerdictCache(max_bytes=2_000)
    for index in range(50):
        await cache.put(f"key-{index}", CachedVerdict("x" * 100))
        assert cache.bytes <= 2_000
    assert 0 < len(cache) < 50
    assert await cache.get("key-0") is None
    assert await cache.get("key-49") is not None


async def test_the_lru_evicts_the_least_recently_used() -> None:
    cache = MemoryVerdictCache(max_bytes=3 * 400)
    for key in ("a", "b"):
        await cache.put(key, CachedVerdict("x"))
    await cache.get("a")
    await cache.put("c", CachedVerdict("x"))
    await cache.put("d", CachedVerdict("x"))
    assert await cache.get("a") is not None
    assert await cache.get("b") is None


def test_a_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryVerdictCache(max_bytes=0)


def test_a_cached_verdict_round_trips_its_json() -> None:
    verdict = CachedVerdict('{"score": 1}', "stop", 0.5, "gpt-x")
    assert CachedVerdict.from_json(verdict.to_json()) == verdict


async def test_a_process_default_applies_where_no_context_chose() -> None:
    judge = ScriptedJudge(always('{"score": 0.5}'))
    previous = install_verdict_caching(VerdictCaching(MemoryVerdictCache()))
    try:
        await scorer(judge).run(output="o")
        await scorer(judge).run(output="o")
        assert judge.calls == 1
        with not_caching_verdicts():
            await scorer(judge).run(output="o")
        assert judge.calls == 2
    finally:
        install_verdict_caching(previous)
    await scorer(judge).run(output="o")
    assert judge.calls == 3
