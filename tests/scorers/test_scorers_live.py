"""Prebuilt scorers under live scoring: attached to a watched agent function like any scorer."""

from __future__ import annotations

import json

import pytest

from scorewatch.judge.protocol import JudgeRequest
from scorewatch.live import CallbackSink, LiveScoring, ScoreRecord
from scorewatch.scorers import checks, create_answer_relevancy_scorer
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit


def _reply(request: JudgeRequest) -> str:
    if request.step == "preprocess":
        return json.dumps({"statements": ["Paris is the capital.", "It is lovely."]})
    if request.step == "analyze":
        return json.dumps(
            {
                "results": [
                    {"result": "yes", "reason": ""},
                    {"result": "no", "reason": ""},
                ]
            }
        )
    return "The score is 0.5 because one statement is off topic."


async def test_prebuilt_scorers_score_live_traffic() -> None:
    judge = ScriptedJudge(_reply)
    collected: list[ScoreRecord] = []
    live = LiveScoring(
        scorers={
            "relevancy": create_answer_relevancy_scorer(judge),
            "mentions-paris": checks.includes("paris"),
        },
        sinks=[CallbackSink(collected.append)],
        drain_on_exit=False,
    )

    @live.watch(target="geo-bot")
    async def answer(question: str) -> str:
        return "Paris is the capital. It is lovely."

    assert await answer("What is the capital of France?") == "Paris is the capital. It is lovely."
    assert await live.drain(timeout=10)
    await live.aclose()
    scores = {result.scorer_id: result.score for result in collected}
    assert scores == {"answer-relevancy-scorer": 0.5, "check-includes": 1.0}
    assert judge.calls == 3
    analyze = next(r.prompt for r in judge.requests if r.step == "analyze")
    assert "What is the capital of France?" in analyze
