"""`not_scorable()`: a step ends the run without a score (issue 16, item 3), compared with what the
reference system returns for the same scorers (tests/fixtures/reference/core/not_scorable.json,
recorded by tools/reference/record_not_scorable.mjs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import scorewatch as sw
from core_support import RecordingObserver, observing, round_trip, wire
from reference_fixtures import load_reference, reference_keys, stable_wire
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

REFERENCE = load_reference("core/not_scorable.json")


class Claims(BaseModel):
    claims: list[str]


def _base() -> sw.Scorer:
    return sw.create_scorer(id="ns", description="d")


def preprocess_with_reason() -> tuple[sw.Scorer, ScriptedJudge | None]:
    return _base().preprocess(lambda ctx: sw.not_scorable("no tool calls")).generate_score(
        lambda ctx: 1
    ), None


def analyze_without_reason() -> tuple[sw.Scorer, ScriptedJudge | None]:
    scorer = (
        _base()
        .preprocess(lambda ctx: {"words": 3})
        .analyze(lambda ctx: sw.not_scorable())
        .generate_score(lambda ctx: 1)
        .generate_reason(lambda ctx: "never")
    )
    return scorer, None


def generate_score() -> tuple[sw.Scorer, ScriptedJudge | None]:
    scorer = (
        _base()
        .preprocess(lambda ctx: {"words": 3})
        .generate_score(lambda ctx: sw.not_scorable("empty"))
        .generate_reason(lambda ctx: "never")
    )
    return scorer, None


def generate_reason_drops_score() -> tuple[sw.Scorer, ScriptedJudge | None]:
    scorer = (
        _base().generate_score(lambda ctx: 1).generate_reason(lambda ctx: sw.not_scorable("late"))
    )
    return scorer, None


def after_prompt_step() -> tuple[sw.Scorer, ScriptedJudge | None]:
    judge = ScriptedJudge(['{"claims": ["a"]}'])
    scorer = (
        sw.create_scorer(
            id="ns",
            description="d",
            judge=sw.JudgeConfig(model=judge, instructions="Judge carefully."),
        )
        .analyze(
            sw.PromptStep(
                description="Extract claims",
                output_schema=Claims,
                create_prompt=lambda ctx: "List the claims.",
            )
        )
        .generate_score(
            lambda ctx: (
                1
                if len(ctx.results.analyze_step_result["claims"]) > 1
                else sw.not_scorable("one claim only")
            )
        )
        .generate_reason(lambda ctx: "never")
    )
    return scorer, judge


CASES: dict[str, Callable[[], tuple[sw.Scorer, ScriptedJudge | None]]] = {
    "preprocess_with_reason": preprocess_with_reason,
    "analyze_without_reason": analyze_without_reason,
    "generate_score": generate_score,
    "generate_reason_drops_score": generate_reason_drops_score,
    "after_prompt_step": after_prompt_step,
}


def test_every_recorded_case_is_exercised() -> None:
    assert set(CASES) == set(REFERENCE)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_wire_form_matches_the_reference(name: str) -> None:
    scorer, judge = CASES[name]()
    result = await scorer.run(input="q", output="a")
    assert stable_wire(reference_keys(wire(result))) == REFERENCE[name]
    assert result.score is None
    assert result.not_scorable is not None
    if judge is not None:
        assert judge.calls == 1  # the reason step was skipped: no further judge call


async def test_later_steps_are_skipped() -> None:
    calls: list[str] = []

    def later(name: str, value: Any) -> Callable[[sw.StepContext], Any]:
        def step(ctx: sw.StepContext) -> Any:
            calls.append(name)
            return value

        return step

    scorer = (
        _base()
        .preprocess(later("preprocess", {"x": 1}))
        .analyze(lambda ctx: sw.not_scorable("stop"))
        .generate_score(later("generate_score", 1))
        .generate_reason(later("generate_reason", "r"))
    )
    result = await scorer.run(output="a")
    assert calls == ["preprocess"]
    assert result.not_scorable == sw.core.NotScorableInfo(step="analyze", reason="stop")
    assert result.preprocess_step_result == {"x": 1}


async def test_round_trips_through_the_wire_form() -> None:
    scorer, _ = generate_score()
    result = await scorer.run(output="a")
    again = round_trip(result)
    assert again.not_scorable == sw.core.NotScorableInfo(step="generate_score", reason="empty")
    assert again.score is None
    assert "score" not in wire(again)


async def test_async_step_may_return_it() -> None:
    async def nothing(ctx: sw.StepContext) -> Any:
        return sw.not_scorable("async")

    result = await _base().preprocess(nothing).generate_score(lambda ctx: 1).run(output="a")
    assert result.not_scorable == sw.core.NotScorableInfo(step="preprocess", reason="async")


async def test_listeners_hear_a_finished_run_without_score() -> None:
    observer = RecordingObserver()
    scorer, _ = preprocess_with_reason()
    with observing(observer):
        result = await scorer.run(output="a")
    listener = observer.only
    assert listener.names() == ["step_started", "step_finished", "run_finished"]
    assert listener.payloads("run_finished") == [result]
    assert listener.payloads("step_finished")[0].result == sw.not_scorable("no tool calls")


def test_marker_is_exported_and_checked() -> None:
    marker = sw.not_scorable("why")
    assert isinstance(marker, sw.NotScorable) and marker.reason == "why"
    assert sw.is_not_scorable(marker) and not sw.is_not_scorable({"reason": "why"})
    from scorewatch.core import NotScorable, not_scorable

    assert NotScorable is sw.NotScorable and not_scorable is sw.not_scorable
    with pytest.raises(TypeError):
        sw.not_scorable(3)  # type: ignore[arg-type]
