"""Scores keep their type (issue 16, item 2): an int step result stays an int, and a reason that
interpolates it reads as the reference's does (tests/fixtures/reference/core/score_types.json,
recorded by tools/reference/record_score_types.mjs)."""

from __future__ import annotations

import pytest

import scorewatch as sw
from core_support import round_trip, wire
from reference_fixtures import load_reference
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

REFERENCE = load_reference("core/score_types.json")


@pytest.mark.parametrize("name", sorted(REFERENCE["functionScore"]))
async def test_function_score_and_reason_read_as_the_reference(name: str) -> None:
    expected = REFERENCE["functionScore"][name]
    value = expected["score"]  # JSON keeps 1 an int and 0.5 a float, as the step returns them
    result = await (
        sw.create_scorer(id="types", description="d")
        .generate_score(lambda ctx: value)
        .generate_reason(lambda ctx: f"Score: {ctx.score}")
        .run(output="a")
    )
    assert (result.score, result.reason) == (expected["score"], expected["reason"])
    assert type(result.score) is type(value)
    assert type(round_trip(result).score) is type(value)
    assert wire(result)["score"] == expected["score"]


@pytest.mark.parametrize("name", sorted(REFERENCE["judgedScore"]))
async def test_judged_score_reaches_the_reason_prompt_as_the_reference(name: str) -> None:
    expected = REFERENCE["judgedScore"][name]
    judge = ScriptedJudge([expected["answer"], "because"])
    result = await (
        sw.create_scorer(
            id="types", description="d", judge=sw.JudgeConfig(model=judge, instructions="J.")
        )
        .generate_score(sw.PromptStep("Score", lambda ctx: "Score it."))
        .generate_reason(sw.PromptStep("Explain", lambda ctx: f"Explain the score {ctx.score}."))
        .run(output="a")
    )
    assert result.score == expected["score"]
    assert type(result.score) is type(expected["score"])
    assert result.generate_reason_prompt == expected["reasonPrompt"]
