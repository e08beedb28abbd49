"""`scorewatch.testing.in_memory_telemetry()`, the harness users' tests get: what a run emits is
readable inside the block, and the block leaves scorewatch uninstrumented."""

from __future__ import annotations

import pytest

import scorewatch as sw
from scorewatch import telemetry
from scorewatch.telemetry import names
from scorewatch.testing import InMemoryTelemetry, ScriptedJudge, in_memory_telemetry

pytestmark = pytest.mark.unit


def _judged(scorer_id: str, *answers: str) -> sw.Scorer:
    judge = sw.JudgeConfig(model=ScriptedJudge(list(answers)), instructions="Rate.")
    return sw.create_scorer(id=scorer_id, description="d", judge=judge).generate_score(
        sw.PromptStep("rate", lambda ctx: f"Rate {ctx.run.output}")
    )


async def test_spans_points_and_events_of_runs_inside_the_block() -> None:
    with in_memory_telemetry() as otel:
        assert isinstance(otel, InMemoryTelemetry) and telemetry.is_instrumented()
        await _judged("first", '{"score": 0.25}').run(output="a", run_id="run-1")
        with pytest.raises(sw.ScorerRunError):  # not JSON, nor after the fallback
            await _judged("second", "not JSON", "still not").run(output="b", run_id="run-2")
        assert otel.span("evaluation first").attributes[names.ATTR_SCORE] == 0.25
        events = {event[names.ATTR_RUN_ID]: event for event in otel.evaluation_events()}
        assert events["run-1"][names.ATTR_EVALUATION_SCORE_VALUE] == 0.25
        assert names.ATTR_ERROR_TYPE in events["run-2"]
        ok = otel.point(names.METRIC_SCORER_RUNS, gen_ai__evaluation__name="first")
        assert ok.value == 1 and ok.attributes[names.ATTR_OUTCOME] == names.OUTCOME_SUCCESS
        (histogram,) = otel.points(names.METRIC_SCORE)
        assert (histogram.count, histogram.sum) == (1, 0.25)
        with pytest.raises(AssertionError, match="2 points"):
            otel.point(names.METRIC_SCORER_RUNS)  # one per scorer: ambiguous
        with pytest.raises(AssertionError, match="0 finished spans"):
            otel.span("evaluation third")
    assert not telemetry.is_instrumented()
    await _judged("after", '{"score": 1}').run(output="c")
    assert otel.spans_named("evaluation after") == []
