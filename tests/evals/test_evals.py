"""run_evals and run_experiment: validation, means, verdicts, failure isolation and bounded
concurrency."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import scorewatch as sw
from scorewatch.evals import RunOutcome
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit


def score_from_output(scorer_id: str = "echo") -> sw.Scorer:
    """Scores the number the target produced."""
    return sw.create_scorer(id=scorer_id, description="d").generate_score(
        lambda ctx: float(ctx.run.output)
    )


def failing(scorer_id: str = "boom", *, after_score: bool = False) -> sw.Scorer:
    def explode(ctx: Any) -> str:
        raise RuntimeError("reason exploded")

    base = sw.create_scorer(id=scorer_id, description="d")
    if after_score:
        return base.generate_score(lambda ctx: 0.4).generate_reason(explode)
    return base.generate_score(lambda ctx: 1 / 0)


DATA = [{"input": "0.6", "ground_truth": "g1"}, {"input": "1.0", "ground_truth": "g2"}]


async def test_run_evals_rejects_empty_data_missing_input_and_no_scorers() -> None:
    scorer = score_from_output()
    with pytest.raises(sw.ScorewatchError) as empty:
        await sw.run_evals(data=[], target=float, scorers=[scorer])
    assert empty.value.code == "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED"
    with pytest.raises(sw.ScorewatchError) as missing:
        await sw.run_evals(data=[{"ground_truth": 1}], target=float, scorers=[scorer])
    assert missing.value.code == "INVALID_DATA_ITEM"
    assert "index 0" in missing.value.message
    with pytest.raises(sw.ScorewatchError) as none:
        await sw.run_evals(data=DATA, target=float, scorers=[])
    assert none.value.code == "NO_SCORERS_PROVIDED"
    with pytest.raises(sw.ScorewatchError) as bad:
        await sw.run_evals(data=DATA, target=float, scorers=[sw.ScorerEntry(scorer, threshold=1.5)])
    assert bad.value.code == "INVALID_SCORER_THRESHOLD"
    with pytest.raises(sw.ScorewatchError) as inverted:
        await sw.run_evals(
            data=DATA,
            target=float,
            scorers=[sw.ScorerEntry(scorer, threshold={"min": 0.9, "max": 0.1})],
        )
    assert inverted.value.code == "INVALID_SCORER_THRESHOLD"


async def test_scores_are_per_scorer_means_and_total_items_counts_items() -> None:
    result = await sw.run_evals(data=DATA, target=lambda text: text, scorers=[score_from_output()])
    assert result.scores == {"echo": pytest.approx(0.8)}
    assert result.summary.total_items == 2
    assert result.verdict is None


async def test_scorer_receives_item_fields_and_experiment_source() -> None:
    seen: list[sw.ScorerRun] = []

    def capture(ctx: Any) -> float:
        seen.append(ctx.run)
        return 1.0

    scorer = sw.create_scorer(id="capture", description="d").generate_score(capture)
    await sw.run_evals(
        data=[{"input": "q", "ground_truth": "g", "request_context": {"user": "u"}}],
        target=lambda text: text.upper(),
        scorers=[scorer],
    )
    (run,) = seen
    assert (run.input, run.output, run.ground_truth) == ("q", "Q", "g")
    assert run.request_context == {"user": "u"}
    assert run.score_source == "experiment"


async def test_items_with_output_need_no_target() -> None:
    result = await sw.run_evals(data=[{"output": "0.25"}], scorers=[score_from_output()])
    assert result.scores == {"echo": 0.25}


async def test_a_scorer_error_rejects_the_run_naming_scorer_and_item() -> None:
    with pytest.raises(sw.ScorewatchError) as raised:
        await sw.run_evals(data=DATA, target=str, scorers=[score_from_output(), failing()])
    error = raised.value
    assert error.code == "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"
    assert "Error running scorer boom" in error.message
    assert error.details["scorerId"] == "boom"
    assert "0.6" in error.details["item"]
    assert isinstance(error.__cause__, sw.ScorerRunError)


async def test_a_failing_gate_counts_as_zero() -> None:
    result = await sw.run_evals(
        data=DATA, target=str, scorers=[score_from_output()], gates=[failing("gate")]
    )
    assert result.gate_results is not None
    assert result.gate_results[0].score == 0.0
    assert result.verdict == "failed"


async def test_target_failure_is_reported() -> None:
    def broken(text: str) -> str:
        raise ValueError("agent down")

    with pytest.raises(sw.ScorewatchError) as raised:
        await sw.run_evals(data=DATA, target=broken, scorers=[score_from_output()])
    assert raised.value.code == "RUN_EXPERIMENT_TARGET_FAILED_TO_GENERATE_RESULT"


async def test_on_item_complete_is_called_once_per_item() -> None:
    # Issue 16 item 6: one argument (item, target_result, scorer_results), as the reference's.
    calls: list[tuple[Any, Any, dict[str, sw.ScorerRunResult]]] = []

    async def on_item(done: Any) -> None:
        calls.append((done.item, done.target_result, done.scorer_results))

    await sw.run_evals(
        data=DATA, target=lambda t: t, scorers=[score_from_output()], on_item_complete=on_item
    )
    assert len(calls) == 2
    assert {c[0]["input"] for c in calls} == {"0.6", "1.0"}
    assert all(set(c[2]) == {"echo"} for c in calls)
    assert {c[2]["echo"].score for c in calls} == {0.6, 1.0}


async def test_gate_and_threshold_verdicts() -> None:
    always_one = sw.create_scorer(id="gate", description="d").generate_score(lambda c: 1)
    scorer = score_from_output()
    passed = await sw.run_evals(
        data=DATA, target=str, scorers=[sw.ScorerEntry(scorer, threshold=0.7)], gates=[always_one]
    )
    assert passed.verdict == "passed"
    scored = await sw.run_evals(
        data=DATA, target=str, scorers=[sw.ScorerEntry(scorer, threshold=0.9)], gates=[always_one]
    )
    assert scored.verdict == "scored"
    assert scored.threshold_results is not None and not scored.threshold_results[0].passed
    ranged = await sw.run_evals(
        data=DATA, target=str, scorers=[sw.ScorerEntry(scorer, threshold={"min": 0.5, "max": 0.7})]
    )
    assert ranged.verdict == "scored"
    gated = await sw.run_evals(
        data=DATA, target=str, scorers=[scorer], gates=[score_from_output("half")]
    )
    assert gated.verdict == "failed"


async def test_concurrency_is_bounded() -> None:
    in_flight = 0
    peak = 0

    async def agent(text: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.005)
        in_flight -= 1
        return text

    data = [{"input": "0.5"} for _ in range(20)]
    result = await sw.run_evals(
        data=data, target=agent, scorers=[score_from_output()], concurrency=3
    )
    assert result.summary.total_items == 20
    assert peak == 3


async def test_judge_calls_bounded_by_concurrency() -> None:
    in_flight = 0
    peak = 0

    async def reply(request: sw.judge.JudgeRequest) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.005)
        in_flight -= 1
        return '{"score": 0.5}'

    judge = ScriptedJudge(reply)
    scorer = sw.create_scorer(
        id="judged", description="d", judge=sw.JudgeConfig(model=judge, instructions="i")
    ).generate_score(sw.PromptStep("score", lambda ctx: "rate it"))
    data = [{"output": "x"} for _ in range(12)]
    result = await sw.run_evals(data=data, scorers=[scorer], concurrency=4)
    assert result.scores == {"judged": 0.5}
    assert judge.calls == 12
    assert peak == 4


async def test_experiment_isolates_a_failing_scorer() -> None:
    outcomes: list[RunOutcome] = []
    result = await sw.run_experiment(
        data=DATA,
        target=str,
        scorers=[score_from_output(), failing()],
        on_result=outcomes.append,
    )
    assert result.status == "completed"
    assert result.scores == {"echo": pytest.approx(0.8)}
    for item in result.items:
        assert item.results["echo"].error is None
        broken = item.results["boom"]
        assert broken.score is None and broken.reason is None
        assert broken.error is not None and broken.error.startswith("Scorer Run Failed:")
    assert result.summary.scorer_failures == {"echo": 0, "boom": 2}
    assert len(outcomes) == 4


async def test_recovered_score_kept_in_memory_not_stored_as_success() -> None:
    stored_successes: list[RunOutcome] = []
    stored_failures: list[RunOutcome] = []

    def sink(outcome: RunOutcome) -> None:
        (stored_successes if outcome.result is not None else stored_failures).append(outcome)

    result = await sw.run_experiment(
        data=[{"output": "x"}], scorers=[failing("late", after_score=True)], on_result=sink
    )
    recovered = result.items[0].results["late"]
    assert recovered.score == 0.4
    assert recovered.failed_step == "generate_reason"
    assert recovered.completed_steps == ["generate_score"]
    assert recovered.error is not None and "reason exploded" in recovered.error
    assert stored_successes == []
    assert len(stored_failures) == 1
    assert isinstance(stored_failures[0].error, sw.ScorerRunError)
    assert result.scores == {}


async def test_experiment_target_failures_mark_items() -> None:
    def broken(text: str) -> str:
        raise ValueError("down")

    result = await sw.run_experiment(data=DATA, target=broken, scorers=[score_from_output()])
    assert result.status == "failed"
    assert all(item.target_error for item in result.items)


def test_sync_wrappers() -> None:
    result = sw.run_evals_sync(data=DATA, target=str, scorers=[score_from_output()])
    assert result.scores == {"echo": pytest.approx(0.8)}
    experiment = sw.run_experiment_sync(data=DATA, target=str, scorers=[score_from_output()])
    assert experiment.scores == {"echo": pytest.approx(0.8)}
