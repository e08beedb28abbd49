"""`ScorerRunError`: failed step, completed steps, snapshot, message, serialization and the cause
chain, and run-time bad input that must fail clearly."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import scorewatch as sw
from core_support import (
    USAGE_10_20_30,
    cause_chain,
    executions,
    judge_config,
    round_trip_snapshot,
    wire,
)
from scorewatch.core.errors import (
    INVALID_STEP_RESULT,
    MISSING_MODEL_OR_INSTRUCTIONS,
    RUN_FAILED,
)
from scorewatch.judge import JudgeError, JudgeProviderError, RetryPolicy
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit


async def failed_run(scorer: sw.Scorer, **fields: Any) -> sw.ScorerRunError:
    fields.setdefault("output", "the answer")
    fields.setdefault("input", "the question")
    with pytest.raises(sw.ScorerRunError) as caught:
        await scorer.run(**fields)
    return caught.value


def boom(message: str = "step exploded") -> Any:
    def fail(ctx: sw.StepContext) -> Any:
        raise ValueError(message)

    return fail


# ---------------------------------------------------------------------- score step failure


async def test_score_step_failure_after_analyze() -> None:
    scorer = (
        sw.create_scorer(id="s31", description="d")
        .analyze(lambda ctx: {"claims": 3})
        .generate_score(boom())
    )
    error = await failed_run(scorer, run_id="run-31")
    assert error.failed_step == "generate_score"
    assert error.completed_steps == ["analyze"]
    snapshot = error.result
    assert snapshot is not None
    assert snapshot.analyze_step_result == {"claims": 3}
    assert snapshot.run_id == "run-31"
    assert (snapshot.input, snapshot.output) == ("the question", "the answer")
    assert snapshot.score is None
    assert snapshot.judge is None
    data = wire(snapshot)
    assert "score" not in data and "judge" not in data
    assert data["analyzeStepResult"] == {"claims": 3}
    assert round_trip_snapshot(snapshot) == snapshot


# --------------------------------------------------------------------- reason step failure


async def test_reason_failure_after_score_zero() -> None:
    judge = ScriptedJudge(['{"score": 0}', JudgeProviderError("bad request", status_code=400)])
    scorer = (
        sw.create_scorer(id="s32", description="d", judge=judge_config(judge))
        .generate_score(sw.PromptStep("s", lambda ctx: "score prompt"))
        .generate_reason(sw.PromptStep("r", lambda ctx: "reason prompt"))
    )
    error = await failed_run(scorer)
    assert error.failed_step == "generate_reason"
    assert error.completed_steps == ["generate_score"]
    snapshot = error.result
    assert snapshot is not None
    assert snapshot.score == 0
    data = wire(snapshot)
    assert data["score"] == 0
    score_record = executions(data, "generateScore")
    reason_record = executions(data, "generateReason")
    assert [r["status"] for r in score_record] == ["success"]
    assert [r["status"] for r in reason_record] == ["failed"]
    assert (reason_record[0]["attemptCount"], reason_record[0]["modelCallCount"]) == (1, 0)
    assert "usage" not in reason_record[0]
    assert data["generateScorePrompt"] == "score prompt"
    assert "generateReasonPrompt" not in data
    all_records = score_record + reason_record
    assert sum(r.get("usage", {}).get("inputTokens", 0) for r in all_records) == 10


# ------------------------------------------------------------- first function step failure


async def test_first_function_step_failing_has_no_result() -> None:
    scorer = (
        sw.create_scorer(id="s33", description="d").preprocess(boom()).generate_score(lambda ctx: 1)
    )
    error = await failed_run(scorer)
    assert error.result is None
    assert error.failed_step == "preprocess"
    assert error.completed_steps == []


async def test_async_first_step_failing_has_no_result() -> None:
    async def fail(ctx: sw.StepContext) -> float:
        await asyncio.sleep(0)
        raise KeyError("missing")

    error = await failed_run(sw.create_scorer(id="s", description="d").generate_score(fail))
    assert error.result is None
    assert isinstance(error.__cause__, KeyError)


# --------------------------------------------------------------- first prompt step failure


async def test_first_prompt_step_failing_after_an_attempt() -> None:
    judge = ScriptedJudge(["garbage", "more garbage"])
    scorer = (
        sw.create_scorer(id="s34", description="d", judge=judge_config(judge))
        .analyze(sw.PromptStep("a", lambda ctx: "analyze prompt", output_schema={"type": "object"}))
        .generate_score(lambda ctx: 1)
    )
    error = await failed_run(scorer, run_id="run-34")
    assert error.failed_step == "analyze"
    assert error.completed_steps == []
    snapshot = error.result
    assert snapshot is not None
    data = wire(snapshot)
    assert set(data) == {"runId", "input", "output", "judge", "metadata"}
    assert data["runId"] == "run-34"
    assert data["metadata"] == {"scorerVersion": scorer.version_fingerprint}
    record = executions(data, "analyze")
    assert len(record) == 1
    assert record[0]["status"] == "failed"
    assert record[0]["prompt"] == "analyze prompt"
    assert round_trip_snapshot(snapshot) == snapshot


async def test_create_prompt_failing_makes_no_record_and_no_result() -> None:
    judge = ScriptedJudge([])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", boom("prompt template broke"))
    )
    error = await failed_run(scorer)
    assert error.result is None
    assert judge.calls == 0
    assert str(error) == "Scorer Run Failed: prompt template broke"


# ---------------------------------------------------------------- error message and fields


async def test_run_error_message_code_domain_category_and_details() -> None:
    scorer = (
        sw.create_scorer(id="s35", description="d")
        .preprocess(lambda ctx: 1)
        .analyze(lambda ctx: 2)
        .generate_score(boom("division by zero somewhere"))
        .generate_reason(lambda ctx: "never")
    )
    error = await failed_run(scorer)
    assert isinstance(error, sw.ScorewatchError)
    assert error.message == "Scorer Run Failed: division by zero somewhere"
    assert str(error) == error.message
    assert error.code == error.id == RUN_FAILED == "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED"
    assert (error.domain, error.category) == ("SCORER", "USER")
    assert error.details == {
        "scorerId": "s35",
        "steps": "preprocess, analyze, generateScore, generateReason",
        "failedStep": "generateScore",
        "completedSteps": "preprocess, analyze",
    }
    assert error.completed_steps == ["preprocess", "analyze"]


async def test_message_uses_a_scorewatch_cause_message_and_names_empty_causes() -> None:
    judge = ScriptedJudge([JudgeProviderError("upstream 503", status_code=503)])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    assert (await failed_run(scorer)).message == "Scorer Run Failed: upstream 503"

    def silent(ctx: sw.StepContext) -> float:
        raise RuntimeError

    silent_scorer = sw.create_scorer(id="s", description="d").generate_score(silent)
    assert (await failed_run(silent_scorer)).message == "Scorer Run Failed: RuntimeError"


# --------------------------------------------------------------------- error serialization


async def test_run_error_serialization_omits_result_prompts_and_raw_output() -> None:
    judge = ScriptedJudge(['{"verdict": "PRIVATE-VERDICT"}', "RAW-JUDGE-TEXT", "RAW-JUDGE-TEXT-2"])
    scorer = (
        sw.create_scorer(id="s36", description="d", judge=judge_config(judge))
        .analyze(
            sw.PromptStep(
                "a", lambda ctx: "SECRET-ANALYZE-PROMPT", output_schema={"type": "object"}
            )
        )
        .generate_score(sw.PromptStep("s", lambda ctx: "SECRET-SCORE-PROMPT"))
    )
    error = await failed_run(scorer, input="PRIVATE-INPUT", output="PRIVATE-OUTPUT")
    assert error.result is not None  # the snapshot exists, but is never serialized
    data = error.to_dict()
    text = json.dumps(data)
    assert set(data) == {"message", "domain", "category", "code", "details", "cause"}
    assert data["code"] == RUN_FAILED
    assert data["details"]["failedStep"] == "generateScore"
    assert data["cause"]["code"] == "STRUCTURED_OUTPUT_JSON_PARSE_FAILED"
    for private in (
        "analyzeStepResult",
        "rawOutput",
        "SECRET-ANALYZE-PROMPT",
        "SECRET-SCORE-PROMPT",
        "RAW-JUDGE-TEXT",
        "PRIVATE-VERDICT",
        "PRIVATE-INPUT",
        "PRIVATE-OUTPUT",
    ):
        assert private not in text, private
    assert not hasattr(error, "failed_judge_execution")
    assert not hasattr(error, "failedJudgeExecution")


async def test_cause_of_a_plain_exception_serializes_name_and_message() -> None:
    error = await failed_run(sw.create_scorer(id="s", description="d").generate_score(boom()))
    assert error.to_dict()["cause"] == {"name": "ValueError", "message": "step exploded"}


# ------------------------------------------------------------------------- the cause chain


class ProviderHTTPError(Exception):
    """Stands in for an SDK's own exception, with the context a caller may want to inspect."""

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers


def _provider_failure(attempt: int) -> JudgeProviderError:
    error = JudgeProviderError(
        f"service unavailable (attempt {attempt})",
        code="PROVIDER_UNAVAILABLE",
        status_code=503,
        request_id=f"req-{attempt}",
        retryable=True,
    )
    error.__cause__ = ProviderHTTPError(503, {"x-request-id": f"req-{attempt}", "retry-after": "0"})
    return error


async def test_provider_error_attributes_are_reachable_via_the_cause_chain() -> None:
    policy = RetryPolicy(max_retries=2, base_delay=0, jitter=False)
    judge = ScriptedJudge([_provider_failure(n) for n in (1, 2, 3)], retry_policy=policy)
    scorer = sw.create_scorer(id="s37", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    error = await failed_run(scorer)
    chain = cause_chain(error)
    judge_error = next(e for e in chain if isinstance(e, JudgeError))
    assert judge_error is error.__cause__
    assert judge_error.status_code == 503
    assert judge_error.request_id == "req-3"  # the last attempt's error
    assert judge_error.retryable is True and judge_error.is_retryable is True
    sdk_error = next(e for e in chain if isinstance(e, ProviderHTTPError))
    assert sdk_error.headers["x-request-id"] == "req-3"
    assert judge.calls == 3
    # The serialized error keeps the status and request id, never the headers.
    cause = error.to_dict()["cause"]
    assert cause["details"] == {"statusCode": 503, "requestId": "req-3", "retryable": True}
    assert "retry-after" not in json.dumps(error.to_dict())


async def test_raise_from_keeps_the_original_error_as_cause() -> None:
    original = ValueError("original")

    def fail(ctx: sw.StepContext) -> float:
        raise original

    error = await failed_run(sw.create_scorer(id="s", description="d").generate_score(fail))
    assert error.__cause__ is original


# ------------------------------------------------------------- bad input found at run time


async def test_prompt_step_without_any_judge_names_scorer_and_step() -> None:
    scorer = sw.create_scorer(id="no-judge", description="d").generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    error = await failed_run(scorer)
    assert error.failed_step == "generate_score"
    assert "'no-judge'" in error.message and "'generate_score'" in error.message
    assert isinstance(error.__cause__, sw.ScorewatchError)
    assert error.__cause__.code == MISSING_MODEL_OR_INSTRUCTIONS
    assert error.__cause__.details == {"scorerId": "no-judge", "step": "generate_score"}
    assert error.result is None


@pytest.mark.parametrize(
    "returned", ["0.5", None, True, float("nan"), float("inf"), 10**400, [1], {"score": 1}]
)
async def test_generate_score_returning_a_non_number_names_scorer_and_step(returned: Any) -> None:
    scorer = sw.create_scorer(id="bad-score", description="d").generate_score(lambda ctx: returned)
    error = await failed_run(scorer)
    assert error.failed_step == "generate_score"
    cause = error.__cause__
    assert isinstance(cause, sw.ScorewatchError)
    assert cause.code == INVALID_STEP_RESULT
    assert "'bad-score'" in error.message and "'generate_score'" in error.message
    assert "finite number" in error.message


@pytest.mark.parametrize("value", [0, 1, -2, 0.5, 10**6])
async def test_generate_score_accepts_any_finite_number(value: float) -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: value)
    result = await scorer.run(output="o")
    assert result.score == value
    # Issue 16 item 2: the score keeps the type the step returned (an int stays an int).
    assert type(result.score) is type(value)


async def test_create_prompt_returning_a_non_string_names_scorer_and_step() -> None:
    judge = ScriptedJudge([])
    scorer = sw.create_scorer(id="bad-prompt", description="d", judge=judge_config(judge))
    scorer = scorer.generate_score(sw.PromptStep("s", lambda ctx: {"not": "a string"}))  # type: ignore[arg-type,return-value]
    error = await failed_run(scorer)
    assert "'bad-prompt'" in error.message and "'generate_score'" in error.message
    assert "expected str" in error.message
    assert judge.calls == 0


async def test_scripted_judge_running_out_of_replies_fails_the_run_instead_of_hanging() -> None:
    judge = ScriptedJudge([])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    error = await failed_run(scorer)
    assert "ran out of replies" in error.message


async def test_failed_records_keep_usage_of_completed_work() -> None:
    judge = ScriptedJudge(['{"score": 0.2}', ValueError("reason backend down")])
    scorer = (
        sw.create_scorer(id="s", description="d", judge=judge_config(judge))
        .generate_score(sw.PromptStep("s", lambda ctx: "p"))
        .generate_reason(sw.PromptStep("r", lambda ctx: "p"))
    )
    error = await failed_run(scorer)
    assert error.result is not None
    data = wire(error.result)
    assert executions(data, "generateScore")[0]["usage"] == USAGE_10_20_30
    assert executions(data, "generateReason")[0]["error"] == {
        "name": "ValueError",
        "message": "reason backend down",
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run_id", 5),
        ("target", ["agent"]),
        ("target_trace_id", 123),
        ("score_source", {"live": True}),
        ("target_metadata", ["not", "a", "dict"]),
        ("target_metadata", {1: "int key"}),
    ],
)
async def test_mistyped_run_fields_are_rejected_before_any_step(field: str, value: Any) -> None:
    called: list[int] = []
    scorer = sw.create_scorer(id="typed", description="d").generate_score(
        lambda ctx: called.append(1) or 1
    )
    with pytest.raises(sw.ScorewatchError) as caught:
        await scorer.run(output="o", **{field: value})
    error = caught.value
    assert not isinstance(error, sw.ScorerRunError)
    assert error.code == "SCOREWATCH_SCORER_INVALID_RUN"
    assert error.details == {"scorerId": "typed", "field": field}
    assert repr(field) in error.message and "'typed'" in error.message
    assert called == []


async def test_prepare_run_output_is_type_checked_too() -> None:
    def bad_prepare(run: Any) -> dict[str, Any]:
        return {"output": run.output, "runId": 7}

    scorer = sw.create_scorer(id="prep", description="d", prepare_run=bad_prepare)
    with pytest.raises(sw.ScorewatchError) as caught:
        await scorer.generate_score(lambda ctx: 1).run(output="o")
    assert caught.value.details == {"scorerId": "prep", "field": "run_id"}


async def test_partial_model_text_on_a_judge_error_is_never_serialized() -> None:
    partial = JudgeProviderError("stream dropped", text="PARTIAL-RAW-ANSWER", model_call_count=1)
    judge = ScriptedJudge([partial])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", lambda ctx: "p")
    )
    error = await failed_run(scorer)
    assert "PARTIAL-RAW-ANSWER" not in json.dumps(error.to_dict())
    assert error.result is not None
    record = executions(wire(error.result), "generateScore")[0]
    assert record["rawOutput"] == "PARTIAL-RAW-ANSWER"
    assert record["modelCallCount"] == 1
