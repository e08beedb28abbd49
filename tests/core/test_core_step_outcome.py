"""The pipeline builds a step's `StepOutcome` and a run's `RunStart` by position: each field must
hold what its name says, for a step that returned and one that raised (a field added to either
event, or moved, fails here)."""

from __future__ import annotations

from dataclasses import fields

import pytest

import scorewatch as sw
from core_support import observing
from scorewatch.core.errors import ScorerRunError
from scorewatch.core.events import RunStart, StepOutcome, TraceLink, linked_runs

pytestmark = pytest.mark.unit


def test_the_events_fields_are_those_the_pipeline_fills_in_order() -> None:
    assert [f.name for f in fields(StepOutcome)] == [
        "step",
        "step_type",
        "duration_s",
        "error",
        "prompt",
        "execution",
        "result",
    ]
    assert [f.name for f in fields(RunStart)] == ["scorer", "run", "emit_score", "links"]


async def test_a_returning_steps_outcome_and_the_run_start_hold_their_fields() -> None:
    scorer = (
        sw.create_scorer(id="outcomes", description="d")
        .analyze(lambda ctx: {"words": 3})
        .generate_score(lambda ctx: 0.25)
    )
    link = TraceLink("a" * 32, "b" * 16)
    with observing() as observer, linked_runs(link):
        await scorer.run(output="three words here", run_id="run-1")
    (start,) = observer.starts
    assert start.scorer is scorer
    assert start.run.run_id == "run-1" and start.run.output == "three words here"
    assert start.emit_score is True
    assert start.links == (link,)
    analyze, score = observer.only.payloads("step_finished")
    assert (analyze.step, analyze.step_type) == ("analyze", "function")
    assert analyze.result == {"words": 3}
    assert (score.step, score.step_type, score.result) == ("generate_score", "function", 0.25)
    for outcome in (analyze, score):
        assert isinstance(outcome.duration_s, float) and outcome.duration_s >= 0.0
        assert (outcome.error, outcome.prompt, outcome.execution) == (None, None, None)


async def test_a_raising_steps_outcome_holds_its_error() -> None:
    failure = ValueError("no score today")

    def fails(ctx: object) -> float:
        raise failure

    scorer = sw.create_scorer(id="fails", description="d").generate_score(fails)
    with observing() as observer, pytest.raises(ScorerRunError):
        await scorer.run(output="x")
    (outcome,) = observer.only.payloads("step_finished")
    assert (outcome.step, outcome.step_type) == ("generate_score", "function")
    assert outcome.error is failure
    assert (outcome.prompt, outcome.execution, outcome.result) == (None, None, None)
    assert isinstance(outcome.duration_s, float) and outcome.duration_s >= 0.0
