"""The scorer builder: construction, immutability, step order, definition errors ."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import scorewatch as sw
from core_support import judge_config
from scorewatch.core.errors import (
    INVALID_SCORER_DEFINITION,
    MISSING_GENERATE_SCORE,
    MISSING_ID,
)
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit


class Verdict(BaseModel):
    ok: bool


def _score(ctx: sw.StepContext) -> float:
    return 1.0


def _prompt(ctx: sw.StepContext) -> str:
    return "judge this"


# ------------------------------------------------------------------------------ scorer ids


@pytest.mark.parametrize("missing", [None, ""])
def test_create_scorer_without_id_raises_missing_id(missing: Any) -> None:
    with pytest.raises(sw.ScorewatchError) as caught:
        sw.create_scorer(id=missing, description="no id")
    error = caught.value
    assert error.code == "MASTR_SCORER_FAILED_TO_CREATE_MISSING_ID" == MISSING_ID
    assert error.id == error.code
    assert (error.domain, error.category) == ("SCORER", "USER")
    assert "id" in error.message


def test_create_scorer_without_any_argument_raises_missing_id() -> None:
    with pytest.raises(sw.ScorewatchError) as caught:
        sw.create_scorer()
    assert caught.value.code == MISSING_ID


# ---------------------------------------------------------------------------- scorer names


def test_name_defaults_to_id() -> None:
    scorer = sw.create_scorer(id="quality", description="Evaluates response quality")
    assert scorer.name == "quality"
    assert scorer.id == "quality"
    assert scorer.description == "Evaluates response quality"


def test_explicit_name_is_kept_through_chaining() -> None:
    scorer = sw.create_scorer(id="quality", name="Quality Scorer", description="d")
    chained = scorer.generate_score(_score)
    assert (chained.id, chained.name, chained.description) == ("quality", "Quality Scorer", "d")


def test_accessors_expose_configuration() -> None:
    judge = judge_config(ScriptedJudge([]))
    scorer = sw.create_scorer(
        id="s",
        description="d",
        judge=judge,
        type="agent",
        scale=10,
        direction="lower_is_better",
    ).generate_score(_score)
    assert scorer.judge is judge
    assert scorer.type == "agent"
    assert scorer.scale == 10
    assert scorer.direction == "lower_is_better"


def test_scorer_judge_may_be_a_mapping() -> None:
    model = ScriptedJudge([])
    scorer = sw.create_scorer(id="s", description="d", judge={"model": model, "instructions": "x"})
    assert isinstance(scorer.judge, sw.JudgeConfig)
    assert scorer.judge.model is model
    assert scorer.judge.instructions == "x"


# --------------------------------------------------------- a scorer without generate_score


async def test_run_without_generate_score_raises_plain_error() -> None:
    scorer = (
        sw.create_scorer(id="no-score", description="d")
        .preprocess(lambda ctx: 1)
        .analyze(lambda ctx: 2)
    )
    with pytest.raises(sw.ScorewatchError) as caught:
        await scorer.run(input="i", output="o")
    error = caught.value
    assert not isinstance(error, sw.ScorerRunError)
    assert error.code == MISSING_GENERATE_SCORE
    assert error.code == "MASTR_SCORER_FAILED_TO_RUN_MISSING_GENERATE_SCORE"
    assert error.details == {"scorerId": "no-score", "steps": "preprocess, analyze"}
    assert "no-score" in error.message


async def test_missing_generate_score_details_use_wire_step_names() -> None:
    scorer = sw.create_scorer(id="reason-only", description="d").generate_reason(lambda ctx: "r")
    with pytest.raises(sw.ScorewatchError) as caught:
        await scorer.run(output="o")
    assert caught.value.details["steps"] == "generateReason"


async def test_empty_scorer_raises_missing_generate_score() -> None:
    with pytest.raises(sw.ScorewatchError) as caught:
        await sw.create_scorer(id="empty", description="d").run(output="o")
    assert caught.value.code == MISSING_GENERATE_SCORE
    assert caught.value.details["steps"] == ""


# ----------------------------------------------------------------------- immutable builder


def test_step_methods_return_new_scorers_and_leave_the_original_unchanged() -> None:
    base = sw.create_scorer(id="s", description="d")
    with_pre = base.preprocess(lambda ctx: 1)
    with_analyze = with_pre.analyze(sw.PromptStep("analyze it", _prompt, output_schema={}))
    with_score = with_pre.generate_score(_score)

    assert base.get_steps() == []
    assert with_pre.get_steps() == [{"name": "preprocess", "type": "function"}]
    assert with_analyze.get_steps() == [
        {"name": "preprocess", "type": "function"},
        {"name": "analyze", "type": "prompt", "description": "analyze it"},
    ]
    # Branching from the same scorer does not leak steps between branches.
    assert with_score.get_steps() == [
        {"name": "preprocess", "type": "function"},
        {"name": "generate_score", "type": "function"},
    ]
    assert len({id(base), id(with_pre), id(with_analyze), id(with_score)}) == 4


async def test_original_scorer_still_runs_its_own_steps() -> None:
    base = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 0.25)
    extended = base.generate_reason(lambda ctx: "extended")
    assert (await base.run(output="o")).reason is None
    assert (await extended.run(output="o")).reason == "extended"


def test_get_steps_lists_prompt_steps_with_description() -> None:
    scorer = (
        sw.create_scorer(id="s", description="d")
        .generate_score(sw.PromptStep("Score it", _prompt))
        .generate_reason(sw.PromptStep("Explain it", _prompt))
    )
    assert scorer.get_steps() == [
        {"name": "generate_score", "type": "prompt", "description": "Score it"},
        {"name": "generate_reason", "type": "prompt", "description": "Explain it"},
    ]


def test_prompt_step_may_be_given_as_a_mapping() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        {"description": "Score it", "create_prompt": _prompt}
    )
    assert scorer.get_steps() == [
        {"name": "generate_score", "type": "prompt", "description": "Score it"}
    ]


# -------------------------------------------------------------- definition errors (bad input)


def _assert_definition_error(error: sw.ScorewatchError, scorer_id: str, step: str) -> None:
    assert error.code == INVALID_SCORER_DEFINITION
    assert repr(scorer_id) in error.message, error.message
    assert repr(step) in error.message, error.message
    assert error.details == {"scorerId": scorer_id, "step": step}


@pytest.mark.parametrize("not_callable", [42, "a string", None, {"description": "no prompt"}])
def test_step_that_is_not_callable_names_scorer_and_step(not_callable: Any) -> None:
    scorer = sw.create_scorer(id="bad-step", description="d")
    with pytest.raises(sw.ScorewatchError) as caught:
        scorer.analyze(not_callable)
    _assert_definition_error(caught.value, "bad-step", "analyze")


@pytest.mark.parametrize(
    "schema",
    [42, "not a schema", str, list[int], {"type": 12}, {"type": "no-such-type"}, Verdict(ok=True)],
)
def test_output_schema_that_is_not_a_schema_names_scorer_and_step(schema: Any) -> None:
    scorer = sw.create_scorer(id="bad-schema", description="d")
    with pytest.raises(sw.ScorewatchError) as caught:
        scorer.preprocess(sw.PromptStep("p", _prompt, output_schema=schema))
    _assert_definition_error(caught.value, "bad-schema", "preprocess")
    assert "output_schema" in caught.value.message


@pytest.mark.parametrize("step", ["preprocess", "analyze"])
def test_structured_prompt_step_without_output_schema_is_rejected(step: str) -> None:
    scorer = sw.create_scorer(id="no-schema", description="d")
    with pytest.raises(sw.ScorewatchError) as caught:
        getattr(scorer, step)(sw.PromptStep("p", _prompt))
    _assert_definition_error(caught.value, "no-schema", step)


def test_prompt_step_whose_create_prompt_is_not_callable_is_rejected() -> None:
    scorer = sw.create_scorer(id="bad-prompt", description="d")
    with pytest.raises(sw.ScorewatchError) as caught:
        scorer.generate_score(sw.PromptStep("p", "not callable"))  # type: ignore[arg-type]
    _assert_definition_error(caught.value, "bad-prompt", "generate_score")


def test_prompt_step_judge_of_the_wrong_type_is_rejected() -> None:
    scorer = sw.create_scorer(id="bad-judge", description="d")
    with pytest.raises(sw.ScorewatchError) as caught:
        scorer.generate_score(sw.PromptStep("p", _prompt, judge="gpt"))  # type: ignore[arg-type]
    _assert_definition_error(caught.value, "bad-judge", "generate_score")


@pytest.mark.parametrize(
    ("chain", "offending"),
    [
        (("generate_score", "analyze"), "analyze"),
        (("analyze", "preprocess"), "preprocess"),
        (("generate_reason", "generate_score"), "generate_score"),
        (("analyze", "analyze"), "analyze"),
        (("generate_score", "generate_score"), "generate_score"),
    ],
)
def test_steps_out_of_order_or_repeated_name_scorer_and_step(
    chain: tuple[str, str], offending: str
) -> None:
    first, second = chain
    scorer = getattr(sw.create_scorer(id="order", description="d"), first)(_score)
    with pytest.raises(sw.ScorewatchError) as caught:
        getattr(scorer, second)(_score)
    _assert_definition_error(caught.value, "order", offending)
    assert repr(first) in caught.value.message


def test_skipping_optional_steps_is_allowed() -> None:
    scorer = sw.create_scorer(id="s", description="d").analyze(_score).generate_reason(_score)
    assert [step["name"] for step in scorer.get_steps()] == ["analyze", "generate_reason"]


def test_prepare_run_that_is_not_callable_is_rejected() -> None:
    with pytest.raises(sw.ScorewatchError) as caught:
        sw.create_scorer(id="prep", description="d", prepare_run=42)  # type: ignore[arg-type]
    _assert_definition_error(caught.value, "prep", "prepare_run")


def test_unknown_direction_is_rejected() -> None:
    with pytest.raises(sw.ScorewatchError) as caught:
        sw.create_scorer(id="dir", description="d", direction="sideways")  # type: ignore[arg-type]
    _assert_definition_error(caught.value, "dir", "direction")


def test_copy_changes_fields_and_keeps_steps() -> None:
    original = sw.create_scorer(id="a", description="d").generate_score(lambda ctx: 0.5)
    renamed = original.copy(id="b", name="B", scale=10)
    assert (renamed.id, renamed.name, renamed.scale) == ("b", "B", 10)
    assert renamed.steps == original.steps and original.id == "a"
    assert renamed.run_sync(output="x").score == 0.5
    for bad in ({"steps": ()}, {"unknown": 1}, {"judge": None}):
        with pytest.raises(TypeError):
            original.copy(**bad)
