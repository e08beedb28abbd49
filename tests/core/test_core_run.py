"""The run pipeline: step order, contexts, run ids, result shape, prepare_run, run_sync and the
run hooks that stand in for the reference system's observability."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest

import scorewatch as sw
from core_support import (
    RecordingObserver,
    judge_config,
    observing,
    round_trip,
    wire,
)
from scorewatch.core.result import ScorerRun
from scorewatch.judge import JudgeProviderError
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

TWELVE_WORDS = "Machine learning is a subset of artificial intelligence that learns from data."
EIGHT_WORDS = "Machine learning lets computers learn from their data."


def quality_scorer() -> sw.Scorer:
    """The worked example of issue 2 / the reference page."""
    return (
        sw.create_scorer(
            id="quality", name="Quality Scorer", description="Evaluates response quality"
        )
        .preprocess(lambda ctx: {"word_count": len(ctx.run.output.split(" "))})
        .analyze(
            lambda ctx: {"has_substance": ctx.results.preprocess_step_result["word_count"] > 10}
        )
        .generate_score(
            lambda ctx: 1.0 if ctx.results.analyze_step_result["has_substance"] else 0.0
        )
        .generate_reason(
            lambda ctx: (
                f"Score: {ctx.score}. Response has "
                f"{ctx.results.preprocess_step_result['word_count']} words."
            )
        )
    )


# ------------------------------------------------------------------------ worked example


async def test_worked_example_twelve_words_scores_one() -> None:
    assert len(TWELVE_WORDS.split(" ")) == 12
    result = await quality_scorer().run(input="What is machine learning?", output=TWELVE_WORDS)
    assert result.score == 1.0
    assert result.reason == "Score: 1.0. Response has 12 words."
    assert result.preprocess_step_result == {"word_count": 12}
    assert result.analyze_step_result == {"has_substance": True}
    assert result.judge is None


async def test_worked_example_eight_words_scores_zero() -> None:
    assert len(EIGHT_WORDS.split(" ")) == 8
    result = await quality_scorer().run(input="What is machine learning?", output=EIGHT_WORDS)
    assert result.score == 0.0
    assert result.reason == "Score: 0.0. Response has 8 words."


def test_worked_example_through_run_sync() -> None:
    scorer = quality_scorer()
    high = scorer.run_sync(input="What is machine learning?", output=TWELVE_WORDS)
    low = scorer.run_sync(input="What is machine learning?", output=EIGHT_WORDS)
    assert (high.score, low.score) == (1.0, 0.0)
    assert high.run_id != low.run_id


# ------------------------------------------------------------------------------ step order


async def test_steps_run_in_chained_order_and_see_earlier_results() -> None:
    seen: list[tuple[str, Any, Any, Any]] = []

    def step(name: str, value: Any) -> Any:
        def run(ctx: sw.StepContext) -> Any:
            results = ctx.results
            seen.append(
                (
                    name,
                    results.preprocess_step_result,
                    results.analyze_step_result,
                    results.generate_score_step_result,
                )
            )
            return value

        return run

    scorer = (
        sw.create_scorer(id="order", description="d")
        .preprocess(step("preprocess", {"p": 1}))
        .analyze(step("analyze", {"a": 2}))
        .generate_score(step("generate_score", 0.5))
        .generate_reason(step("generate_reason", "why"))
    )
    result = await scorer.run(output="o")
    assert seen == [
        ("preprocess", None, None, None),
        ("analyze", {"p": 1}, None, None),
        ("generate_score", {"p": 1}, {"a": 2}, None),
        ("generate_reason", {"p": 1}, {"a": 2}, 0.5),
    ]
    assert (result.score, result.reason) == (0.5, "why")


# --------------------------------------------------------------- the reason step's context


async def test_generate_reason_context_exposes_the_score() -> None:
    seen: dict[str, Any] = {}

    def reason(ctx: sw.StepContext) -> str:
        seen["score"] = ctx.score
        seen["result"] = ctx.results.generate_score_step_result
        return "ok"

    scorer = (
        sw.create_scorer(id="s", description="d")
        .generate_score(lambda ctx: 0.75)
        .generate_reason(reason)
    )
    await scorer.run(output="o")
    assert seen == {"score": 0.75, "result": 0.75}


async def test_score_is_not_set_for_earlier_steps() -> None:
    seen: list[Any] = []
    scorer = (
        sw.create_scorer(id="s", description="d")
        .analyze(lambda ctx: seen.append(ctx.score))
        .generate_score(lambda ctx: seen.append(ctx.score) or 1)
    )
    await scorer.run(output="o")
    assert seen == [None, None]


# -------------------------------------------------------------------- sync and async steps


async def test_sync_and_async_steps_and_create_prompt_are_supported() -> None:
    judge = ScriptedJudge(['{"verdict": "yes"}', '{"score": 0.4}'])

    async def preprocess(ctx: sw.StepContext) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"length": len(ctx.run.output)}

    def analyze_prompt(ctx: sw.StepContext) -> str:
        return f"length {ctx.results.preprocess_step_result['length']}"

    async def score_prompt(ctx: sw.StepContext) -> str:
        await asyncio.sleep(0)
        return f"verdict {ctx.results.analyze_step_result['verdict']}"

    async def reason(ctx: sw.StepContext) -> str:
        await asyncio.sleep(0)
        return f"async reason for {ctx.score}"

    scorer = (
        sw.create_scorer(id="mixed", description="d", judge=judge_config(judge))
        .preprocess(preprocess)
        .analyze(sw.PromptStep("a", analyze_prompt, output_schema={"type": "object"}))
        .generate_score(sw.PromptStep("s", score_prompt))
        .generate_reason(reason)
    )
    result = await scorer.run(output="abcdef")
    assert result.preprocess_step_result == {"length": 6}
    assert result.analyze_prompt == "length 6"
    assert result.generate_score_prompt == "verdict yes"
    assert result.score == 0.4
    assert result.reason == "async reason for 0.4"
    assert [request.prompt for request in judge.requests] == ["length 6", "verdict yes"]


# --------------------------------------------------------------------------------- run ids


async def test_run_id_is_preserved_when_given() -> None:
    seen: list[str | None] = []
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        lambda ctx: seen.append(ctx.run.run_id) or 1
    )
    result = await scorer.run(output="o", run_id="run-42")
    assert result.run_id == "run-42"
    assert seen == ["run-42"]


@pytest.mark.parametrize("given", [None, ""])
async def test_run_id_is_generated_when_omitted_or_empty(given: str | None) -> None:
    seen: list[str | None] = []
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        lambda ctx: seen.append(ctx.run.run_id) or 1
    )
    first = await scorer.run(output="o", run_id=given)
    second = await scorer.run(output="o", run_id=given)
    assert uuid.UUID(first.run_id).version == 4
    assert first.run_id != second.run_id
    assert seen == [first.run_id, second.run_id]


# ----------------------------------------------------------------- the result's run fields

ARTEFACT_FIELDS = (
    "score",
    "reason",
    "preprocess_step_result",
    "analyze_step_result",
    "preprocess_prompt",
    "analyze_prompt",
    "generate_score_prompt",
    "generate_reason_prompt",
)


async def test_success_result_has_run_fields_and_all_artefact_keys() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1)
    result = await scorer.run(
        input={"question": "q"},
        output="answer",
        ground_truth="expected",
        request_context={"userId": "u1"},
        run_id="r1",
        score_source="experiment",
        target="support-agent",
        target_trace_id="t" * 32,
        target_span_id="s" * 16,
        target_metadata={"k": "v"},
    )
    assert result.input == {"question": "q"}
    assert result.output == "answer"
    assert result.ground_truth == "expected"
    assert result.request_context == {"userId": "u1"}
    assert result.score_source == "experiment"
    assert result.target == "support-agent"
    assert result.target_trace_id == "t" * 32
    assert result.target_span_id == "s" * 16
    assert result.target_metadata == {"k": "v"}
    for name in ARTEFACT_FIELDS:
        assert name in type(result).model_fields
    assert result.score == 1.0
    assert (result.reason, result.preprocess_step_result, result.analyze_step_result) == (
        None,
        None,
        None,
    )
    assert result.generate_score_prompt is None

    data = wire(result)
    assert data == {
        "runId": "r1",
        "input": {"question": "q"},
        "output": "answer",
        "groundTruth": "expected",
        "requestContext": {"userId": "u1"},
        "scoreSource": "experiment",
        "target": "support-agent",
        "targetTraceId": "t" * 32,
        "targetSpanId": "s" * 16,
        "targetMetadata": {"k": "v"},
        "score": 1.0,
        # scorewatch's one addition to the reference's keys: the scorer version.
        "metadata": {"scorerVersion": scorer.version_fingerprint},
    }
    assert round_trip(result) == result


async def test_run_may_be_given_as_a_camel_case_mapping() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1)
    result = await scorer.run(
        {"input": "i", "output": "o", "groundTruth": "g", "runId": "r", "requestContext": {}}
    )
    assert (result.input, result.output, result.ground_truth, result.run_id) == ("i", "o", "g", "r")
    assert result.request_context == {}


async def test_unknown_run_field_is_a_clear_error() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1)
    with pytest.raises(TypeError, match="unknown scorer run field 'outptu'"):
        await scorer.run({"outptu": "typo"})


# ------------------------------------------------------------------------ internal options


async def test_internal_never_appears_in_the_result() -> None:
    seen: list[Any] = []
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        lambda ctx: seen.append(ctx.run) or 1
    )
    result = await scorer.run(
        {"output": "o", "input": "i", "_internal": {"emitObservabilityScore": False}}
    )
    assert "_internal" not in result.model_dump()
    assert "_internal" not in wire(result)
    assert "_internal" not in repr(result)
    assert not hasattr(seen[0], "_internal")
    assert result.output == "o"


# ------------------------------------------------------------------- function-only results


async def test_function_only_results_have_no_judge_key() -> None:
    result = await quality_scorer().run(input="q", output=TWELVE_WORDS)
    assert result.judge is None
    assert "judge" not in wire(result)
    assert "judge" not in result.model_dump(exclude_none=True)


# -------------------------------------------------------------------------- stored prompts


async def test_prompt_steps_store_the_exact_create_prompt_string() -> None:
    judge = ScriptedJudge(['{"x": 1}', '{"y": 2}', '{"score": 1}', "fine"])
    prompts = {
        "preprocess": "  Pre-process:\n\tkeep   whitespace ✓ ",
        "analyze": 'Analyze {braces} and "quotes"',
        "generate_score": "",
        "generate_reason": "Reason about it",
    }
    schema = {"type": "object"}
    scorer = (
        sw.create_scorer(id="prompts", description="d", judge=judge_config(judge))
        .preprocess(sw.PromptStep("p", lambda ctx: prompts["preprocess"], output_schema=schema))
        .analyze(sw.PromptStep("a", lambda ctx: prompts["analyze"], output_schema=schema))
        .generate_score(sw.PromptStep("s", lambda ctx: prompts["generate_score"]))
        .generate_reason(sw.PromptStep("r", lambda ctx: prompts["generate_reason"]))
    )
    result = await scorer.run(output="o")
    assert result.preprocess_prompt == prompts["preprocess"]
    assert result.analyze_prompt == prompts["analyze"]
    assert result.generate_score_prompt == prompts["generate_score"]
    assert result.generate_reason_prompt == prompts["generate_reason"]
    assert [r.prompt for r in judge.requests] == list(prompts.values())
    data = wire(result)
    assert data["analyzePrompt"] == prompts["analyze"]
    assert data["generateScorePrompt"] == ""
    assert data["judge"]["preprocess"]["executions"][0]["prompt"] == prompts["preprocess"]


# ----------------------------------------------------------------------------- prepare_run


@pytest.mark.parametrize("flavour", ["sync", "async", "mapping"])
async def test_prepare_run_output_is_what_steps_hooks_and_result_see(
    flavour: str,
) -> None:
    def strip(run: ScorerRun) -> Any:
        if flavour == "mapping":
            return {"input": "[stripped]", "output": run.output.upper(), "runId": run.run_id}
        run.input = "[stripped]"
        run.output = run.output.upper()
        run.request_context = None
        return run

    async def strip_async(run: ScorerRun) -> Any:
        await asyncio.sleep(0)
        return strip(run)

    seen: list[tuple[Any, Any, Any]] = []
    scorer = sw.create_scorer(
        id="prep",
        description="d",
        prepare_run=strip_async if flavour == "async" else strip,
    ).generate_score(
        lambda ctx: seen.append((ctx.run.input, ctx.run.output, ctx.run.request_context)) or 1
    )
    with observing() as observer:
        result = await scorer.run(
            input="secret input", output="answer", request_context={"token": "t"}, run_id="r9"
        )
    assert seen == [("[stripped]", "ANSWER", None)]
    start = observer.starts[0]
    assert (start.run.input, start.run.output, start.run.request_context) == (
        "[stripped]",
        "ANSWER",
        None,
    )
    assert (result.input, result.output, result.request_context) == ("[stripped]", "ANSWER", None)
    assert result.run_id == "r9"
    assert "secret input" not in str(wire(result))


async def test_prepare_run_runs_before_run_id_generation() -> None:
    def give_id(run: ScorerRun) -> ScorerRun:
        assert run.run_id is None
        run.run_id = "from-prepare"
        return run

    scorer = sw.create_scorer(id="s", description="d", prepare_run=give_id).generate_score(
        lambda ctx: 1
    )
    assert (await scorer.run(output="o")).run_id == "from-prepare"


async def test_prepare_run_returning_garbage_is_a_clear_error() -> None:
    scorer = sw.create_scorer(id="prep-bad", description="d", prepare_run=lambda run: 42)
    scorer = scorer.generate_score(lambda ctx: 1)
    with pytest.raises(TypeError, match=r"prep-bad.*prepare_run returned int"):
        await scorer.run(output="o")


async def test_caller_run_object_is_not_mutated() -> None:
    given = ScorerRun(output="o", input="i")
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1)
    result = await scorer.run(given)
    assert given.run_id is None
    assert result.run_id


# ------------------------------------------------------------------------------- run_sync


def test_run_sync_works_from_plain_sync_code() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        lambda ctx: len(ctx.run.output) / 10
    )
    assert scorer.run_sync(output="abcde").score == 0.5
    assert scorer.run_sync(ScorerRun(output="ab")).score == 0.2


def test_run_sync_runs_prompt_steps_and_raises_run_errors() -> None:
    judge = ScriptedJudge(['{"score": 0.9}', JudgeProviderError("down", status_code=503)])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    assert scorer.run_sync(output="o").score == 0.9
    with pytest.raises(sw.ScorerRunError) as caught:
        scorer.run_sync(output="o")
    assert caught.value.failed_step == "generate_score"
    assert isinstance(caught.value.__cause__, JudgeProviderError)


async def test_run_sync_inside_a_running_loop_raises_a_clear_error() -> None:
    called: list[int] = []
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        lambda ctx: called.append(1) or 1
    )
    with pytest.raises(RuntimeError, match="running event loop; await the async method"):
        scorer.run_sync(output="o")
    assert called == []
    # The loop is still healthy afterwards.
    assert (await scorer.run(output="o")).score == 1.0


# ----------------------------------------------------------- observability (hooks): 38-43


def _reason_fails_after_score_zero(judge: ScriptedJudge) -> sw.Scorer:
    return (
        sw.create_scorer(id="recovered", description="d", judge=judge_config(judge))
        .generate_score(sw.PromptStep("s", lambda ctx: "score"))
        .generate_reason(sw.PromptStep("r", lambda ctx: "reason"))
    )


async def test_failed_run_never_reports_a_finished_run_even_with_recovered_score() -> None:
    judge = ScriptedJudge(['{"score": 0}', JudgeProviderError("bad request", status_code=400)])
    with observing() as observer, pytest.raises(sw.ScorerRunError) as caught:
        await _reason_fails_after_score_zero(judge).run(output="o")
    listener = observer.only
    assert "run_finished" not in listener.names()
    assert listener.payloads("run_failed") == [caught.value]
    assert caught.value.result is not None and caught.value.result.score == 0


async def test_failed_function_run_reports_run_failed_once() -> None:
    def fail(ctx: sw.StepContext) -> float:
        raise ValueError("nope")

    scorer = sw.create_scorer(id="s", description="d").generate_score(fail)
    with observing() as observer, pytest.raises(sw.ScorerRunError):
        await scorer.run(output="o")
    listener = observer.only
    assert listener.names() == ["step_started", "step_finished", "run_failed"]
    outcome = listener.payloads("step_finished")[0]
    assert isinstance(outcome.error, ValueError)


async def test_successful_run_reports_finished_once_with_score_identity() -> None:
    scorer = (
        sw.create_scorer(id="quality", name="Quality Scorer", description="d")
        .generate_score(lambda ctx: 0.8)
        .generate_reason(lambda ctx: "good")
    )
    with observing() as observer:
        result = await scorer.run(output="o", ground_truth="g", score_source="live")
    start = observer.starts[0]
    assert (start.scorer.id, start.scorer.name) == ("quality", "Quality Scorer")
    assert start.emit_score is True
    assert start.run.score_source == "live"
    assert start.run.ground_truth == "g"
    listener = observer.only
    assert listener.payloads("run_finished") == [result]
    assert (result.score, result.reason) == (0.8, "good")
    assert listener.names() == [
        "step_started",
        "step_finished",
        "step_started",
        "step_finished",
        "run_finished",
    ]


async def test_without_ground_truth_the_run_start_says_so() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1)
    with observing() as observer:
        await scorer.run(output="o")
    assert observer.starts[0].run.ground_truth is None


@pytest.mark.parametrize(
    ("internal", "keyword", "expected"),
    [
        ({"emitObservabilityScore": False}, True, False),
        ({"emitObservabilityScore": True}, True, True),
        ({}, True, True),
        (None, False, False),
    ],
)
async def test_emit_observability_score_false_reaches_the_hooks(
    internal: dict[str, Any] | None, keyword: bool, expected: bool
) -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1)
    with observing() as observer:
        if internal is None:
            await scorer.run(output="o", emit_score=keyword)
        else:
            await scorer.run({"output": "o", "_internal": internal}, emit_score=keyword)
    assert observer.starts[0].emit_score is expected
    assert len(observer.only.payloads("run_finished")) == 1


@pytest.mark.parametrize("fail_on", ["run_finished", "step_started", "step_finished"])
async def test_listener_exceptions_are_logged_and_the_run_still_resolves(
    fail_on: str, caplog: pytest.LogCaptureFixture
) -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 0.5)
    with (
        caplog.at_level(logging.WARNING, logger="scorewatch.events"),
        observing(RecordingObserver(fail_on=fail_on)),
    ):
        result = await scorer.run(output="o")
    assert result.score == 0.5
    assert any("failed; ignored" in record.getMessage() for record in caplog.records)


async def test_observer_failing_at_run_start_does_not_break_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 0.5)
    healthy = RecordingObserver()
    with (
        caplog.at_level(logging.WARNING, logger="scorewatch.events"),
        observing(RecordingObserver(fail_at_start=True)),
        observing(healthy),
    ):
        result = await scorer.run(output="o")
    assert result.score == 0.5
    assert healthy.only.payloads("run_finished") == [result]
    assert any("run start" in record.getMessage() for record in caplog.records)


async def test_request_context_and_its_keys_reach_the_hooks_unchanged() -> None:
    context = {"userId": "u1", "tenant": {"id": "t1"}, "authToken": "secret"}
    seen: list[Any] = []
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        lambda ctx: seen.append(ctx.run.request_context) or 1
    )
    with observing() as observer:
        await scorer.run(
            {
                "output": "o",
                "requestContext": context,
                "requestContextKeys": ["userId", "tenant.id"],
            }
        )
    run = observer.starts[0].run
    assert run.request_context_keys == ["userId", "tenant.id"]
    # Steps get the request context exactly as given (projection is the telemetry's job).
    assert seen[0] is context
    assert run.request_context is context


async def test_score_trace_id_comes_from_the_listener_trace_id() -> None:
    seen: list[Any] = []
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        lambda ctx: seen.append(ctx.run.score_trace_id) or 1
    )
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    with observing(RecordingObserver(trace_id=trace_id)):
        result = await scorer.run(output="o")
    assert result.score_trace_id == trace_id
    assert seen == [trace_id]
    assert wire(result)["scoreTraceId"] == trace_id


async def test_no_trace_no_score_trace_id() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1)
    with observing(RecordingObserver(trace_id=None)):
        traced_without_id = await scorer.run(output="o")
    untraced = await scorer.run(output="o")
    assert traced_without_id.score_trace_id is None
    assert untraced.score_trace_id is None
    assert "scoreTraceId" not in wire(untraced)


async def test_hooks_see_prompt_steps_and_judge_attempts_in_order() -> None:
    judge = ScriptedJudge(["not json", '{"score": 0.6}'])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    with observing() as observer:
        result = await scorer.run(output="o")
    listener = observer.only
    assert listener.names() == [
        "step_started",
        "judge_attempt_started",
        "judge_attempt_finished",
        "judge_attempt_started",
        "judge_attempt_finished",
        "step_finished",
        "run_finished",
    ]
    assert listener.payloads("step_started") == [("generate_score", "prompt")]
    attempts = listener.payloads("judge_attempt_finished")
    assert [(a.number, a.fallback) for a in attempts] == [(1, False), (2, True)]
    assert all(a.model_id == "scripted-judge" and a.provider == "scripted" for a in attempts)
    outcome = listener.payloads("step_finished")[0]
    assert outcome.prompt == "p"
    assert result.judge is not None
    assert outcome.execution == result.judge["generate_score"].executions[0]
    assert outcome.result == 0.6


# ------------------------------------------------------------ concurrency and cancellation


async def test_concurrent_runs_of_one_scorer_do_not_share_state() -> None:
    async def preprocess(ctx: sw.StepContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"echo": ctx.run.output}

    scorer = (
        sw.create_scorer(id="s", description="d")
        .preprocess(preprocess)
        .generate_score(lambda ctx: float(ctx.results.preprocess_step_result["echo"]) / 100)
    )
    results = await asyncio.gather(*(scorer.run(output=str(n)) for n in range(20)))
    assert [r.score for r in results] == [n / 100 for n in range(20)]
    assert [r.preprocess_step_result for r in results] == [{"echo": str(n)} for n in range(20)]
    assert len({r.run_id for r in results}) == 20


async def test_a_caller_timeout_cancels_a_slow_judge_without_hanging() -> None:
    judge = ScriptedJudge(['{"score": 1}'], delay=30)
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(scorer.run(output="o"), timeout=0.05)
    assert judge.calls == 1


def test_worked_example_prints_its_scores(capsys: pytest.CaptureFixture[str]) -> None:
    scorer = quality_scorer()
    for output in (TWELVE_WORDS, EIGHT_WORDS):
        result = scorer.run_sync(input="What is machine learning?", output=output)
        print(result.score, result.reason)
    assert capsys.readouterr().out.splitlines() == [
        "1.0 Score: 1.0. Response has 12 words.",
        "0.0 Score: 0.0. Response has 8 words.",
    ]


async def test_a_cancelled_run_tells_listeners_it_failed() -> None:
    judge = ScriptedJudge(['{"score": 1}'], delay=30)
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    with observing() as observer, pytest.raises(TimeoutError):
        await asyncio.wait_for(scorer.run(output="o"), timeout=0.05)
    listener = observer.only
    assert "run_finished" not in listener.names()
    (failure,) = listener.payloads("run_failed")
    assert isinstance(failure, asyncio.CancelledError)


async def test_a_failed_prompt_step_reports_its_prompt_and_failed_record_to_listeners() -> None:
    judge = ScriptedJudge(["bad", "still bad"])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "the prompt")
    )
    with observing() as observer, pytest.raises(sw.ScorerRunError) as caught:
        await scorer.run(output="o")
    outcome = observer.only.payloads("step_finished")[0]
    assert outcome.prompt == "the prompt"
    assert outcome.execution is not None and outcome.execution.status == "failed"
    assert outcome.error is caught.value.__cause__
    assert caught.value.result is not None and caught.value.result.judge is not None
    assert caught.value.result.judge["generate_score"].executions == [outcome.execution]


async def test_a_run_object_and_run_keywords_together_is_a_clear_error() -> None:
    scorer = sw.create_scorer(id="both", description="d").generate_score(lambda ctx: 1)
    with pytest.raises(TypeError, match=r"'both'.*not both \(also got run_id, ground_truth\)"):
        await scorer.run({"output": "o"}, ground_truth="g", run_id="r")
    with pytest.raises(TypeError, match="not both"):
        await scorer.run(ScorerRun(output="o"), output="other")
    # emit_score is not a run field: it may accompany a run object.
    assert (await scorer.run({"output": "o"}, emit_score=False)).score == 1.0


async def test_prepare_run_errors_propagate_unwrapped() -> None:
    def refuse(run: ScorerRun) -> ScorerRun:
        raise PermissionError("may not score this")

    scorer = sw.create_scorer(id="s", description="d", prepare_run=refuse).generate_score(
        lambda ctx: 1
    )
    with pytest.raises(PermissionError, match="may not score this"):
        await scorer.run(output="o")


async def test_run_sync_works_from_a_worker_thread_of_a_running_loop() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 0.3)
    result = await asyncio.to_thread(scorer.run_sync, output="o")
    assert result.score == 0.3


def test_run_sync_from_many_threads_at_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    async def score(ctx: sw.StepContext) -> float:
        await asyncio.sleep(0.001)
        return float(ctx.run.output)

    scorer = sw.create_scorer(id="s", description="d").generate_score(score)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda n: scorer.run_sync(output=str(n)), range(16)))
    assert [r.score for r in results] == [float(n) for n in range(16)]


def test_a_result_repeats_every_run_field_but_the_context_keys() -> None:
    import dataclasses

    from scorewatch.core.result import RESULT_RUN_FIELDS, ScorerRunSnapshot

    run_fields = [f.name for f in dataclasses.fields(sw.ScorerRun)]
    # A field added to ScorerRun reaches results (and the stored snapshot) or fails here.
    assert list(RESULT_RUN_FIELDS) == [f for f in run_fields if f != "request_context_keys"]
    assert set(RESULT_RUN_FIELDS) <= set(ScorerRunSnapshot.model_fields)
    run = sw.ScorerRun(
        output="o",
        input="i",
        ground_truth="g",
        target="bot",
        target_trace_id="t" * 32,
        target_metadata={"k": 1},
    )
    result = create_scorer_for_fields().run_sync(run)
    for name in RESULT_RUN_FIELDS:
        if name not in ("run_id", "score_trace_id"):
            assert getattr(result, name) == getattr(run, name), name


def create_scorer_for_fields() -> sw.Scorer:
    return sw.create_scorer(id="fields", description="Scores 1").generate_score(lambda ctx: 1)
