"""Our metric instruments with in-memory readers: values, buckets, cost, cardinality, live."""

from __future__ import annotations

import random

import pytest

import scorewatch as sw
from scorewatch.core.events import OBSERVERS
from scorewatch.judge import JudgeCost, JudgeProviderError, JudgeReply, RetryPolicy
from scorewatch.live.events import Decided, InFlight, QueueDepth
from scorewatch.sinks.delivery import SinkFailed
from scorewatch.telemetry import names
from scorewatch.telemetry.cardinality import CardinalityGuard
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import in_memory_telemetry, prompt_scorer, verdicts

pytestmark = pytest.mark.unit


def _usage_total(results: list[sw.core.ScorerRunSnapshot], key: str) -> int:
    total = 0
    for result in results:
        for record in (result.judge or {}).values():
            for execution in record.executions:
                if execution.usage is not None:
                    total += getattr(execution.usage, key) or 0
    return total


async def test_token_and_execution_metrics_agree_with_the_judge_records() -> None:
    rng = random.Random(7)
    results: list[sw.core.ScorerRunSnapshot] = []
    with in_memory_telemetry() as sink:
        for index in range(30):
            usage = sw.judge.JudgeUsage(
                input_tokens=rng.randint(1, 5000), output_tokens=rng.randint(1, 900)
            )
            script: list[object] = []
            if index % 5 == 0:  # a transient failure that still reported usage, then success
                script.append(
                    JudgeProviderError(
                        "overloaded",
                        code="OVERLOADED",
                        retryable=True,
                        usage=sw.judge.JudgeUsage(input_tokens=11, output_tokens=3),
                        model_call_count=1,
                    )
                )
            if index % 7 == 0:  # the reply cannot be parsed: one structured-output fallback
                script.append(JudgeReply(text="{broken", usage=usage))
            if index % 6 == 0:  # the step fails for good
                script.append(JudgeProviderError("bad request", code="BAD_REQUEST"))
            else:
                script += [JudgeReply(text=verdicts(rng.randint(0, 4)), usage=usage), "why"]
            judge = ScriptedJudge(
                script,  # type: ignore[arg-type]
                usage=usage,
                retry_policy=RetryPolicy(max_retries=1, base_delay=0.0, jitter=False),
            )
            try:
                results.append(await prompt_scorer(judge).run(output=f"answer {index}"))
            except sw.ScorerRunError as error:
                assert error.result is not None
                results.append(error.result)

        executions = [
            execution
            for result in results
            for record in (result.judge or {}).values()
            for execution in record.executions
        ]
        assert any(e.status == "failed" for e in executions)
        for token_type, key in (("input", "input_tokens"), ("output", "output_tokens")):
            points = [
                p
                for p in sink.points(names.METRIC_TOKEN_USAGE)
                if p.attributes["gen_ai.token.type"] == token_type
            ]
            assert sum(p.sum or 0 for p in points) == _usage_total(results, key)
        assert sum(p.value or 0 for p in sink.points(names.METRIC_JUDGE_EXECUTIONS)) == len(
            executions
        )
        for status in ("success", "failed"):
            counted = sum(
                p.value or 0
                for p in sink.points(names.METRIC_JUDGE_EXECUTIONS)
                if p.attributes["scorewatch.status"] == status
            )
            assert counted == sum(1 for e in executions if e.status == status)
        assert sum(p.value or 0 for p in sink.points(names.METRIC_JUDGE_ATTEMPTS)) == sum(
            e.attempt_count for e in executions
        )
        duration_calls = sum(p.count or 0 for p in sink.points(names.METRIC_OPERATION_DURATION))
        assert duration_calls == sum(e.attempt_count for e in executions)


async def test_histograms_use_the_spec_buckets() -> None:
    with in_memory_telemetry() as sink:
        await prompt_scorer(ScriptedJudge([verdicts(2), "ok"])).run(output="x")
        token = sink.points(names.METRIC_TOKEN_USAGE)[0]
        assert token.bounds == list(names.TOKEN_BUCKETS)
        assert token.bounds == [
            1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
            67108864,
        ]  # fmt: skip
        duration = sink.points(names.METRIC_OPERATION_DURATION)[0]
        assert duration.bounds == [
            0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
        ]  # fmt: skip
        score = sink.point(names.METRIC_SCORE)
        assert score.bounds == pytest.approx([i * 0.05 for i in range(21)])
        assert score.sum == 0.5
        assert score.count == 1
        step = sink.point(names.METRIC_STEP_DURATION, scorewatch__step="analyze")
        assert step.attributes == {
            "gen_ai.evaluation.name": "quality",
            "scorewatch.step": "analyze",
            "scorewatch.step.type": "prompt",
        }
        run = sink.point(names.METRIC_RUN_DURATION)
        assert run.attributes == {
            "gen_ai.evaluation.name": "quality",
            "scorewatch.outcome": "success",
        }
        assert run.count == 1


async def test_score_buckets_follow_the_scorer_scale() -> None:
    with in_memory_telemetry() as sink:
        scorer = sw.create_scorer(id="scaled", description="0..10", scale=10).generate_score(
            lambda ctx: 7.5
        )
        result = await scorer.run(output="x")
        assert result.score == 7.5
        point = sink.point(names.METRIC_SCORE, gen_ai__evaluation__name="scaled")
        assert point.bounds == pytest.approx([i * 0.5 for i in range(21)])
        assert point.sum == 7.5


async def test_cost_counter_uses_provider_cost_else_estimate() -> None:
    replies = [
        JudgeReply(text=verdicts(1), cost=JudgeCost(amount=0.25, unit="USD", source="openrouter")),
        JudgeReply(text="why", estimated_cost_usd=0.125),
    ]
    with in_memory_telemetry() as sink:
        await prompt_scorer(ScriptedJudge(replies)).run(output="x")
        provider = sink.point(names.METRIC_JUDGE_COST, scorewatch__cost__source="provider")
        assert provider.value == 0.25
        assert provider.attributes == {
            "gen_ai.request.model": "scripted-judge",
            "gen_ai.evaluation.name": "quality",
            "scorewatch.step": "analyze",
            "scorewatch.cost.source": "provider",
        }
        estimate = sink.point(names.METRIC_JUDGE_COST, scorewatch__cost__source="estimate")
        assert estimate.value == 0.125
        assert estimate.attributes["scorewatch.step"] == "generate_reason"
        chat = [s for s in sink.spans() if s.name.startswith("chat ")]
        costs = {
            (s.attributes or {}).get("scorewatch.judge.cost.source"): (s.attributes or {}).get(
                "scorewatch.judge.cost.amount"
            )
            for s in chat
        }
        assert costs == {"provider": 0.25, "estimate": 0.125}


async def test_no_price_means_no_cost_series() -> None:
    with in_memory_telemetry() as sink:
        await prompt_scorer(ScriptedJudge([verdicts(1), "ok"])).run(output="x")
        assert sink.points(names.METRIC_JUDGE_COST) == []


async def test_target_and_model_cardinality_is_bounded() -> None:
    with in_memory_telemetry(cardinality_limit=2) as sink:
        for index, target in enumerate(["a", "b", "c", "d", "a"]):
            judge = ScriptedJudge([verdicts(1), "ok"], model_id=f"model-{index % 4}")
            await prompt_scorer(judge).run(output="x", target=target)
        targets = sorted(p.attributes["scorewatch.target"] for p in sink.points(names.METRIC_SCORE))
        assert targets == ["_other", "a", "b"]
        assert sink.point(names.METRIC_SCORE, scorewatch__target="_other").count == 2
        assert sink.point(names.METRIC_SCORE, scorewatch__target="a").count == 2
        models = {
            p.attributes["gen_ai.request.model"] for p in sink.points(names.METRIC_TOKEN_USAGE)
        }
        assert models == {"model-0", "model-1", "_other"}
        # Spans keep the real values: the guard is for metric series only.
        run_targets = {
            (s.attributes or {}).get("scorewatch.target")
            for s in sink.spans_named("evaluation quality")
        }
        assert run_targets == {"a", "b", "c", "d"}


def test_cardinality_guard_keeps_admitted_values() -> None:
    guard = CardinalityGuard(3)
    assert [guard(v) for v in "abcdea"] == ["a", "b", "c", "_other", "_other", "a"]
    assert len(guard) == 3
    with pytest.raises(ValueError):
        CardinalityGuard(-1)


async def test_live_observer_metrics() -> None:
    with in_memory_telemetry() as sink:
        OBSERVERS.emit(Decided("quality", "sampled"))
        OBSERVERS.emit(Decided("quality", "sampled"))
        OBSERVERS.emit(Decided("quality", "dropped_queue_full"))
        OBSERVERS.emit(InFlight(1))
        OBSERVERS.emit(InFlight(1))
        OBSERVERS.emit(InFlight(-1))
        OBSERVERS.emit(SinkFailed("sqlite"))
        depth = {"value": 7}
        unregister = OBSERVERS.register_source(QueueDepth, lambda: QueueDepth(depth["value"]))
        unregister_other = OBSERVERS.register_source(QueueDepth, lambda: QueueDepth(5))
        try:
            assert (
                sink.point(names.METRIC_LIVE_DECISIONS, scorewatch__decision="sampled").value == 2
            )
            assert (
                sink.point(
                    names.METRIC_LIVE_DECISIONS, scorewatch__decision="dropped_queue_full"
                ).attributes["gen_ai.evaluation.name"]
                == "quality"
            )
            assert sink.point(names.METRIC_LIVE_IN_FLIGHT).value == 1
            assert sink.point(names.METRIC_SINK_ERRORS).attributes == {"scorewatch.sink": "sqlite"}
            assert sink.point(names.METRIC_LIVE_QUEUE_DEPTH).value == 12
            unregister_other()
            depth["value"] = 2
            assert sink.point(names.METRIC_LIVE_QUEUE_DEPTH).value == 2
        finally:
            unregister()
            unregister_other()
    # Not instrumented: the live hooks are no-ops.
    OBSERVERS.emit(Decided("quality", "sampled"))
    assert OBSERVERS.subscribers == ()


async def test_provider_cost_counter_agrees_with_the_judge_records() -> None:
    def priced(text: str, amount: float) -> JudgeReply:
        return JudgeReply(text=text, cost=JudgeCost(amount=amount, unit="USD", source="provider"))

    scripts = [
        [priced(verdicts(1), 0.5), priced("why", 0.25)],
        # An unusable reply is paid for too, then the fallback attempt.
        [priced("{oops", 0.125), priced(verdicts(2), 0.5), priced("why", 0.0625)],
    ]
    results = []
    with in_memory_telemetry() as sink:
        for script in scripts:
            results.append(await prompt_scorer(ScriptedJudge(script)).run(output="x"))
        recorded = sum(
            execution.cost.amount
            for result in results
            for record in (result.judge or {}).values()
            for execution in record.executions
            if execution.status == "success" and execution.cost is not None
        )
        counted = sum(
            p.value or 0
            for p in sink.points(names.METRIC_JUDGE_COST)
            if p.attributes["scorewatch.cost.source"] == "provider"
        )
        assert recorded == 1.4375
        assert counted == recorded


async def test_instrumenting_twice_on_one_provider_keeps_every_instrument_reporting() -> None:
    from scorewatch import telemetry

    with in_memory_telemetry() as sink:
        telemetry.instrument(sink.tracer_provider, sink.meter_provider, sink.logger_provider)
        unregister = OBSERVERS.register_source(QueueDepth, lambda: QueueDepth(4))
        try:
            await prompt_scorer(ScriptedJudge([verdicts(2), "ok"])).run(output="x")
            assert sink.point(names.METRIC_LIVE_QUEUE_DEPTH).value == 4
            assert sink.point(names.METRIC_SCORER_RUNS).value == 1
            assert len(sink.spans_named("evaluation quality")) == 1
        finally:
            unregister()
