"""Verdict cache metrics agree with the judge records: hits, misses and saved cost."""

from __future__ import annotations

import pytest

from scorewatch.core import MemoryVerdictCache, caching_verdicts
from scorewatch.judge import JudgeReply, JudgeRequest
from scorewatch.telemetry import names
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import in_memory_telemetry, prompt_scorer, verdicts

pytestmark = pytest.mark.unit


def priced(request: JudgeRequest) -> JudgeReply:
    if request.step == "analyze":
        return JudgeReply(text=verdicts(2), estimated_cost_usd=0.25)
    return JudgeReply(text="because", estimated_cost_usd=0.125)


async def test_cache_metrics_agree_with_the_records() -> None:
    judge = ScriptedJudge(priced)
    with in_memory_telemetry() as sink, caching_verdicts(MemoryVerdictCache()):
        results = [await prompt_scorer(judge).run(output="same") for _ in range(3)]
        assert judge.calls == 2  # analyze and generate_reason, once each
        hits = sink.point(
            names.METRIC_JUDGE_CACHE_LOOKUPS,
            scorewatch__judge__cache__result="hit",
            scorewatch__step="analyze",
        )
        misses = sink.point(
            names.METRIC_JUDGE_CACHE_LOOKUPS,
            scorewatch__judge__cache__result="miss",
            scorewatch__step="analyze",
        )
        assert (hits.value, misses.value) == (2, 1)
        assert hits.attributes == {
            "gen_ai.evaluation.name": "quality",
            "scorewatch.step": "analyze",
            "gen_ai.request.model": "scripted-judge",
            "scorewatch.judge.cache.result": "hit",
        }
        saved_in_records = sum(
            execution.saved_cost_usd or 0.0
            for result in results
            for record in (result.judge or {}).values()
            for execution in record.executions
        )
        saved = sum(p.value for p in sink.points(names.METRIC_JUDGE_CACHE_SAVED))
        assert saved == pytest.approx(saved_in_records) == pytest.approx(2 * (0.25 + 0.125))
        spent = sum(p.value for p in sink.points(names.METRIC_JUDGE_COST))
        assert spent == pytest.approx(0.25 + 0.125)
        chat_spans = [s for s in sink.spans() if s.name.startswith("chat")]
        assert len(chat_spans) == 2  # a reused answer called no model: no chat span


async def test_no_cache_no_cache_series() -> None:
    with in_memory_telemetry() as sink:
        await prompt_scorer(ScriptedJudge(priced)).run(output="x")
        assert sink.points(names.METRIC_JUDGE_CACHE_LOOKUPS) == []
        assert sink.points(names.METRIC_JUDGE_CACHE_SAVED) == []
