"""Batch evaluation and the verdict cache: reuse when asked, never for repeats."""

from __future__ import annotations

from typing import Any

import pytest

import scorewatch as sw
from core_support import judge_config
from scorewatch.core import MemoryVerdictCache, caching_verdicts
from scorewatch.evals import run_evals, run_experiment
from scorewatch.judge import JudgeReply, JudgeUsage
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

DATA = [{"input": "q1", "output": "a1"}, {"input": "q2", "output": "a2"}]


def judged_scorer(judge: Any) -> sw.Scorer:
    return sw.create_scorer(id="judged", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("Score it", lambda ctx: f"score {ctx.run.output}")
    )


def counting_judge() -> ScriptedJudge:
    usage = JudgeUsage(input_tokens=5, output_tokens=5, total_tokens=10)
    return ScriptedJudge(
        lambda request: JudgeReply('{"score": 0.5}', usage=usage, estimated_cost_usd=0.01)
    )


async def test_run_evals_reuses_verdicts_when_given_a_cache() -> None:
    judge, cache = counting_judge(), MemoryVerdictCache()
    await run_evals(data=DATA, scorers=[judged_scorer(judge)], cache=cache)
    await run_evals(data=DATA, scorers=[judged_scorer(judge)], cache=cache)
    assert judge.calls == len(DATA)


async def test_run_evals_without_a_cache_judges_every_time() -> None:
    judge = counting_judge()
    await run_evals(data=DATA, scorers=[judged_scorer(judge)])
    await run_evals(data=DATA, scorers=[judged_scorer(judge)])
    assert judge.calls == 2 * len(DATA)


@pytest.mark.parametrize("how", ["argument", "context"])
async def test_repeats_are_judged_every_time(how: str) -> None:
    judge, cache = counting_judge(), MemoryVerdictCache()
    # The cache already holds every item's answer; repeats must still reach the judge.
    await run_evals(data=DATA, scorers=[judged_scorer(judge)], cache=cache)
    assert judge.calls == len(DATA)
    if how == "argument":
        result = await run_evals(data=DATA, scorers=[judged_scorer(judge)], cache=cache, repeat=3)
    else:
        with caching_verdicts(cache):
            result = await run_evals(data=DATA, scorers=[judged_scorer(judge)], repeat=3)
    assert judge.calls == len(DATA) + 3 * len(DATA)
    assert result.noise is not None


async def test_experiment_repeats_are_judged_every_time() -> None:
    judge, cache = counting_judge(), MemoryVerdictCache()
    await run_experiment(data=DATA, scorers=[judged_scorer(judge)], cache=cache)
    await run_experiment(data=DATA, scorers=[judged_scorer(judge)], cache=cache)
    assert judge.calls == len(DATA)
    experiment = await run_experiment(
        data=DATA, scorers=[judged_scorer(judge)], cache=cache, repeat=2
    )
    assert judge.calls == len(DATA) + 2 * len(DATA)
    for item in experiment.items:
        for repeated in item.repeats["judged"]:
            assert repeated.score == 0.5
