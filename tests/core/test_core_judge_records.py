"""Prompt steps, the structured-output fallback and judge execution records."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

import scorewatch as sw
from core_support import (
    USAGE_10_20_30,
    USAGE_20_40_60,
    executions,
    judge_config,
    observing,
    reply,
    round_trip,
    wire,
)
from scorewatch.core import JudgeStepRecord
from scorewatch.core.records import judge_cost_usd
from scorewatch.core.schema import SCORE_SCHEMA
from scorewatch.core.steps import camel_step
from scorewatch.judge import (
    JudgeCost,
    JudgeError,
    JudgeProviderError,
    JudgeReply,
    JudgeRequest,
    JudgeTimeoutError,
    JudgeUsage,
    RetryPolicy,
    normalize_usage,
)
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

OBJECT = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def score_scorer(judge: Any, **judge_fields: Any) -> sw.Scorer:
    return sw.create_scorer(
        id="judged", description="d", judge=judge_config(judge, **judge_fields)
    ).generate_score(sw.PromptStep("Score it", lambda ctx: "score prompt"))


def analyze_scorer(judge: Any, schema: Any = OBJECT, **judge_fields: Any) -> sw.Scorer:
    return (
        sw.create_scorer(id="judged", description="d", judge=judge_config(judge, **judge_fields))
        .analyze(sw.PromptStep("Analyze it", lambda ctx: "analyze prompt", output_schema=schema))
        .generate_score(lambda ctx: 1.0 if ctx.results.analyze_step_result["ok"] else 0.0)
    )


async def failed_run(scorer: sw.Scorer) -> sw.ScorerRunError:
    with pytest.raises(sw.ScorerRunError) as caught:
        await scorer.run(input="i", output="o", run_id="run-1")
    return caught.value


def failed_execution(error: sw.ScorerRunError) -> dict[str, Any]:
    assert error.result is not None
    data = wire(error.result)
    records = executions(data, camel_step(error.failed_step))
    assert len(records) == 1
    return records[0]


# ------------------------------------------------------------------- the score prompt step


async def test_prompt_generate_score_asks_for_a_score_object() -> None:
    judge = ScriptedJudge(['{"score": 0.7}'])
    result = await score_scorer(judge).run(output="o")
    request = judge.requests[0]
    assert request.schema == SCORE_SCHEMA
    assert request.schema == {
        "type": "object",
        "properties": {"score": {"type": "number"}},
        "required": ["score"],
        "additionalProperties": False,  # issue 16 item 7
    }
    assert request.step == "generate_score"
    assert request.instructions == "You are a careful judge."
    assert result.score == 0.7
    assert result.generate_score_prompt == "score prompt"
    assert executions(wire(result), "generateScore")[0]["output"] == 0.7


async def test_integer_score_stays_an_int_and_extra_keys_are_ignored() -> None:
    # Issue 16 item 2 changed this: the judge's integer score is kept as an int.
    judge = ScriptedJudge(['{"score": 3, "explanation": "ignored"}'])
    result = await score_scorer(judge).run(output="o")
    assert result.score == 3
    assert type(result.score) is int


async def test_markdown_fenced_json_is_accepted() -> None:
    judge = ScriptedJudge(['```json\n{"score": 0.25}\n```'])
    assert (await score_scorer(judge).run(output="o")).score == 0.25
    assert judge.calls == 1


# ------------------------------------------------------------------ the reason prompt step


async def test_prompt_generate_reason_returns_raw_text_without_fallback() -> None:
    text = '{"not": "parsed", broken json ... and prose'
    judge = ScriptedJudge(['{"score": 0.5}', text])
    scorer = score_scorer(judge).generate_reason(
        sw.PromptStep("Explain", lambda ctx: f"explain {ctx.score}")
    )
    result = await scorer.run(output="o")
    assert result.reason == text
    assert judge.calls == 2
    reason_request = judge.requests[1]
    assert reason_request.schema is None
    assert reason_request.prompt == "explain 0.5"
    record = executions(wire(result), "generateReason")[0]
    assert (record["status"], record["attemptCount"], record["output"]) == ("success", 1, text)


async def test_failing_reason_step_is_attempted_once() -> None:
    judge = ScriptedJudge(
        ['{"score": 0.5}', JudgeReply(text="cut", finish_reason="length"), "never used"]
    )
    scorer = score_scorer(judge).generate_reason(sw.PromptStep("Explain", lambda ctx: "why"))
    # A truncated plain-text answer is still an answer: no structured fallback for reasons.
    result = await scorer.run(output="o")
    assert result.reason == "cut"
    assert judge.calls == 2


@pytest.mark.parametrize("extra", ["NaN", "-Infinity", "1e400"])
async def test_a_non_json_number_member_is_dropped_on_the_first_call(extra: str) -> None:
    # Issue 16 item 1 changed this from a format failure: the reference drops the member.
    judge = ScriptedJudge(['{"ok": true, "extra": ' + extra + "}", "never used"])
    result = await analyze_scorer(judge).run(output="o")
    assert result.analyze_step_result == {"ok": True}
    assert judge.calls == 1


# --------------------------------------------------------------- step-level judge settings


async def test_step_level_judge_fields_override_scorer_level_ones() -> None:
    scorer_judge = ScriptedJudge([], model_id="scorer-model")
    step_judge = ScriptedJudge(['{"ok": true}', '{"score": 1}'], model_id="step-model")
    scorer = (
        sw.create_scorer(
            id="s",
            description="d",
            judge=judge_config(
                scorer_judge, instructions="scorer instructions", json_prompt_injection="inline"
            ),
        )
        .analyze(
            sw.PromptStep(
                "a",
                lambda ctx: "p",
                output_schema=OBJECT,
                judge=sw.JudgeConfig(model=step_judge, instructions="step instructions"),
            )
        )
        .generate_score(
            sw.PromptStep(
                "s",
                lambda ctx: "p",
                judge=sw.JudgeConfig(model=step_judge, json_prompt_injection="system"),
            )
        )
    )
    result = await scorer.run(output="o")
    assert scorer_judge.calls == 0
    analyze, score = step_judge.requests
    assert (analyze.instructions, analyze.json_prompt_injection) == ("step instructions", "inline")
    assert (score.instructions, score.json_prompt_injection) == ("scorer instructions", "system")
    data = wire(result)
    assert executions(data, "analyze")[0]["judgeModelId"] == "step-model"


async def test_default_json_prompt_injection_is_auto() -> None:
    judge = ScriptedJudge(['{"score": 1}'])
    await score_scorer(judge).run(output="o")
    assert judge.requests[0].json_prompt_injection == "auto"
    assert judge.requests[0].fallback is False
    assert judge.requests[0].attempt == 1


async def test_step_judge_alone_is_enough() -> None:
    judge = ScriptedJudge(['{"score": 0.1}'])
    scorer = sw.create_scorer(id="s", description="d").generate_score(
        sw.PromptStep("s", lambda ctx: "p", judge=judge_config(judge))
    )
    assert (await scorer.run(output="o")).score == 0.1


# ------------------------------------------------------------------ missing judge settings


@pytest.mark.parametrize(
    ("config", "missing"),
    [
        (None, "model and instructions"),
        (sw.JudgeConfig(instructions="only instructions"), "model"),
        (sw.JudgeConfig(model=ScriptedJudge([])), "instructions"),
        (sw.JudgeConfig(model=ScriptedJudge([]), instructions=""), "instructions"),
    ],
)
async def test_missing_model_or_instructions_fails_the_step_without_a_record(
    config: sw.JudgeConfig | None, missing: str
) -> None:
    scorer = (
        sw.create_scorer(id="unjudged", description="d", judge=config)
        .preprocess(lambda ctx: {"pre": 1})
        .analyze(sw.PromptStep("a", lambda ctx: "p", output_schema=OBJECT))
        .generate_score(lambda ctx: 1)
    )
    error = await failed_run(scorer)
    assert error.failed_step == "analyze"
    assert error.completed_steps == ["preprocess"]
    cause = error.__cause__
    assert isinstance(cause, sw.ScorewatchError)
    assert cause.code == "MASTR_SCORER_FAILED_TO_RUN_MISSING_MODEL_OR_INSTRUCTIONS"
    assert f"no judge {missing} configured" in cause.message
    assert "'unjudged'" in error.message and "'analyze'" in error.message
    assert error.result is not None
    assert error.result.preprocess_step_result == {"pre": 1}
    assert error.result.judge is None
    assert "judge" not in wire(error.result)


# ---------------------------------------------------------- the structured-output fallback

FORMAT_FAILURES: list[Any] = [
    "not valid JSON",
    '{"ok": "not a boolean"}',
    '{"other": true}',
    "null",
    JudgeReply(text='{"ok": tr', finish_reason="length"),
    '{"ok": NaN}',
]


@pytest.mark.parametrize("bad", FORMAT_FAILURES)
async def test_format_failure_triggers_exactly_one_fallback(bad: Any) -> None:
    judge = ScriptedJudge([bad, '{"ok": true}'])
    result = await analyze_scorer(judge).run(output="o")
    assert result.analyze_step_result == {"ok": True}
    assert judge.calls == 2
    first, fallback = judge.requests
    assert (first.fallback, first.json_prompt_injection, first.attempt) == (False, "auto", 1)
    assert (fallback.fallback, fallback.json_prompt_injection, fallback.attempt) == (True, True, 2)
    assert fallback.prompt == first.prompt
    assert fallback.schema == first.schema


@pytest.mark.parametrize(
    ("scorer_kind", "bad"),
    [
        ("score", '{"score": Infinity}'),
        ("score", '{"score": NaN}'),
        ("score", '{"score": 1e400}'),
        ("score", '{"score": 1' + "0" * 400 + "}"),
        ("score", '{"score": true}'),
        ("score", '{"score": "0.5"}'),
        ("score", "[0.5]"),
    ],
)
async def test_non_json_numbers_and_non_numeric_scores_are_format_failures(
    scorer_kind: str, bad: str
) -> None:
    # NaN/Infinity are not JSON numbers: the member holding one is dropped (as the reference
    # does), which leaves no score, and a score must be a finite number. Format failures, so the
    # fallback runs.
    good = '{"ok": true}' if scorer_kind == "analyze" else '{"score": 0.5}'
    judge = ScriptedJudge([bad, good])
    scorer = analyze_scorer(judge) if scorer_kind == "analyze" else score_scorer(judge)
    result = await scorer.run(output="o")
    assert judge.calls == 2
    assert judge.requests[1].fallback is True
    data = wire(result)
    if scorer_kind == "analyze":
        assert data["analyzeStepResult"] == {"ok": True}
    else:
        assert data["score"] == 0.5


@pytest.mark.parametrize(
    ("configured", "on_fallback"),
    [("inline", "inline"), ("system", "system"), (False, True), (True, True)],
)
async def test_fallback_keeps_inline_or_system_injection(configured: Any, on_fallback: Any) -> None:
    judge = ScriptedJudge(["nope", '{"score": 1}'])
    await score_scorer(judge, json_prompt_injection=configured).run(output="o")
    assert [r.json_prompt_injection for r in judge.requests] == [configured, on_fallback]


async def test_pydantic_output_schema_validates_and_dumps_plain_json() -> None:
    class Verdict(BaseModel):
        ok: bool
        reasons: list[str] = []

    judge = ScriptedJudge(['{"ok": "maybe"}', '{"ok": true, "reasons": ["clear"]}'])
    result = await analyze_scorer(judge, schema=Verdict).run(output="o")
    assert result.analyze_step_result == {"ok": True, "reasons": ["clear"]}
    assert judge.requests[0].schema == {
        **Verdict.model_json_schema(),
        "additionalProperties": False,  # issue 16 item 7
    }
    assert judge.calls == 2


# --------------------------------------------------------- what the fallback never retries


@pytest.mark.parametrize(
    "provider_error",
    [
        JudgeProviderError("unauthorized", status_code=401),
        JudgeProviderError("server error", status_code=500, retryable=True),
        JudgeTimeoutError("too slow"),
        ConnectionError("reset"),
    ],
)
async def test_provider_errors_are_not_retried_by_the_fallback(
    provider_error: Exception,
) -> None:
    judge = ScriptedJudge([provider_error, '{"ok": true}'])
    error = await failed_run(analyze_scorer(judge))
    assert judge.calls == 1
    assert error.__cause__ is provider_error


async def test_fallback_happens_at_most_once() -> None:
    judge = ScriptedJudge(["bad one", "bad two", '{"ok": true}'])
    await failed_run(analyze_scorer(judge))
    assert judge.calls == 2


# --------------------------------------------------------------------- one successful call


async def test_single_successful_call_record() -> None:
    judge = ScriptedJudge(['{"score": 0.9}'])
    result = await score_scorer(judge).run(output="o")
    record = executions(wire(result), "generateScore")[0]
    assert record == {
        "status": "success",
        "prompt": "score prompt",
        "judgeModelId": "scripted-judge",
        "judgeProvider": "scripted",
        "attemptCount": 1,
        "modelCallCount": 1,
        "durationMs": record["durationMs"],
        "output": 0.9,
        "usage": USAGE_10_20_30,
    }
    assert isinstance(record["durationMs"], int) and record["durationMs"] >= 0
    assert "cost" not in record


async def test_duration_covers_create_prompt() -> None:
    async def slow_prompt(ctx: sw.StepContext) -> str:
        await asyncio.sleep(0.05)
        return "p"

    judge = ScriptedJudge(['{"score": 1}'])
    scorer = sw.create_scorer(id="s", description="d", judge=judge_config(judge)).generate_score(
        sw.PromptStep("s", slow_prompt)
    )
    result = await scorer.run(output="o")
    assert executions(wire(result), "generateScore")[0]["durationMs"] >= 50


async def test_success_with_no_reported_usage_keeps_an_empty_usage_object() -> None:
    judge = ScriptedJudge(['{"score": 1}'], usage=JudgeUsage())
    record = executions(wire(await score_scorer(judge).run(output="o")), "generateScore")[0]
    assert record["usage"] == {}


async def test_cost_only_when_the_judge_reports_an_authoritative_cost() -> None:
    cost = JudgeCost(amount=0.0012, unit="USD", source="provider")
    judge = ScriptedJudge([reply('{"score": 1}', cost=cost, estimated_cost_usd=0.5)])
    record = executions(wire(await score_scorer(judge).run(output="o")), "generateScore")[0]
    assert record["cost"] == {"amount": 0.0012, "unit": "USD", "source": "provider"}

    estimated_only = ScriptedJudge([reply('{"score": 1}', estimated_cost_usd=0.5)])
    result = await score_scorer(estimated_only).run(output="o")
    assert "cost" not in executions(wire(result), "generateScore")[0]


async def test_estimated_cost_adds_each_attempts_provider_figure_else_its_estimate() -> None:
    provider = JudgeCost(amount=0.25, unit="USD", source="provider")
    judge = ScriptedJudge(
        [
            reply("not valid JSON", estimated_cost_usd=0.125),
            reply('{"score": 1}', cost=provider, estimated_cost_usd=9.0),
        ]
    )
    result = await score_scorer(judge).run(output="o")
    assert executions(wire(result), "generateScore")[0]["estimatedCostUsd"] == 0.375
    assert judge_cost_usd(result.judge) == 0.375

    unknown = await score_scorer(ScriptedJudge(['{"score": 1}'])).run(output="o")
    assert "estimatedCostUsd" not in executions(wire(unknown), "generateScore")[0]
    assert judge_cost_usd(unknown.judge) is None

    # A bill in another currency is not turned into dollars, nor replaced by the estimate: the
    # record counts what the cost metric counts.
    euros = JudgeCost(amount=1.0, unit="EUR", source="provider")
    in_euros = ScriptedJudge([reply('{"score": 1}', cost=euros, estimated_cost_usd=0.5)])
    assert judge_cost_usd((await score_scorer(in_euros).run(output="o")).judge) is None


async def test_a_failed_execution_keeps_the_cost_of_its_attempts() -> None:
    judge = ScriptedJudge(
        [reply("not JSON", estimated_cost_usd=0.5), reply("still not", estimated_cost_usd=0.25)]
    )
    with pytest.raises(sw.ScorerRunError) as raised:
        await score_scorer(judge).run(output="o")
    snapshot = raised.value.result
    assert snapshot is not None
    (execution,) = snapshot.judge["generate_score"].executions  # type: ignore[index]
    assert execution.status == "failed"
    assert execution.estimated_cost_usd == 0.75
    assert judge_cost_usd(snapshot.judge) == 0.75


# ------------------------------------------------------------------------ fallback success


async def test_fallback_success_sums_usage() -> None:
    judge = ScriptedJudge(["not valid JSON", '{"score": 0.5}'])
    result = await score_scorer(judge).run(output="o")
    records = executions(wire(result), "generateScore")
    assert len(records) == 1
    record = records[0]
    assert record["status"] == "success"
    assert (record["attemptCount"], record["modelCallCount"]) == (2, 2)
    assert record["usage"] == USAGE_20_40_60
    assert record["output"] == 0.5


async def test_on_finish_is_called_once_per_validated_reply() -> None:
    seen: list[JudgeReply] = []

    async def on_finish(judge_reply: JudgeReply) -> None:
        await asyncio.sleep(0)
        seen.append(judge_reply)

    judge = ScriptedJudge(["not valid JSON", '{"score": 0.5}'])
    await score_scorer(judge, on_finish=on_finish).run(output="o")
    assert [r.text for r in seen] == ['{"score": 0.5}']


# ---------------------------------------------------------- model calls within one attempt


async def test_one_attempt_with_two_model_steps() -> None:
    usage = JudgeUsage(input_tokens=15, output_tokens=25, total_tokens=40)
    judge = ScriptedJudge([JudgeReply(text='{"score": 1}', usage=usage, model_call_count=2)])
    record = executions(wire(await score_scorer(judge).run(output="o")), "generateScore")[0]
    assert (record["attemptCount"], record["modelCallCount"]) == (1, 2)
    assert record["usage"] == {"inputTokens": 15, "outputTokens": 25, "totalTokens": 40}


async def test_zero_model_call_count_reply_still_counts_one_call() -> None:
    judge = ScriptedJudge([JudgeReply(text='{"score": 1}', model_call_count=0)])
    record = executions(wire(await score_scorer(judge).run(output="o")), "generateScore")[0]
    assert record["modelCallCount"] == 1


# --------------------------------------------------------------------- usage normalisation


def test_usage_normalization_maps_legacy_names_and_computes_total() -> None:
    assert normalize_usage({"promptTokens": 7, "completionTokens": 5}).as_dict() == {
        "input_tokens": 7,
        "output_tokens": 5,
        "total_tokens": 12,
    }
    assert normalize_usage({"prompt_tokens": 3}).as_dict() == {
        "input_tokens": 3,
        "total_tokens": 3,
    }
    assert normalize_usage({"inputTokens": 1, "outputTokens": 2, "totalTokens": 9}).as_dict() == {
        "input_tokens": 1,
        "output_tokens": 2,
        "total_tokens": 9,
    }
    assert normalize_usage(
        {"inputTokens": 4, "reasoningTokens": 2, "cachedInputTokens": 1, "junk": 5, "x": "7"}
    ).as_dict() == {
        "input_tokens": 4,
        "total_tokens": 4,
        "reasoning_tokens": 2,
        "cached_input_tokens": 1,
    }
    assert normalize_usage(None).is_empty()
    assert normalize_usage("10 tokens").is_empty()
    assert normalize_usage({"promptTokens": "many"}).is_empty()


async def test_normalized_usage_lands_in_the_record_in_wire_form() -> None:
    usage = normalize_usage(
        {"promptTokens": 7, "completionTokens": 5, "cacheCreationInputTokens": 2}
    )
    judge = ScriptedJudge([JudgeReply(text='{"score": 1}', usage=usage)])
    record = executions(wire(await score_scorer(judge).run(output="o")), "generateScore")[0]
    assert record["usage"] == {
        "inputTokens": 7,
        "outputTokens": 5,
        "totalTokens": 12,
        "cacheCreationInputTokens": 2,
    }


# ------------------------------------------------------------------------ provider failure


async def test_provider_failure_before_any_response() -> None:
    judge = ScriptedJudge([JudgeProviderError("connection refused", code="CONNECTION_FAILED")])
    error = await failed_run(score_scorer(judge))
    record = failed_execution(error)
    assert record["status"] == "failed"
    assert (record["attemptCount"], record["modelCallCount"]) == (1, 0)
    assert record["finishReason"] == "error"
    for absent in ("usage", "output", "rawOutput", "cost"):
        assert absent not in record
    assert record["error"] == {
        "name": "JudgeProviderError",
        "message": "connection refused",
        "code": "CONNECTION_FAILED",
    }


async def test_failure_after_the_model_answered_counts_its_evidence() -> None:
    usage = JudgeUsage(input_tokens=4, output_tokens=0, total_tokens=4)
    failure = JudgeProviderError("content filter", usage=usage, finish_reason="content_filter")
    judge = ScriptedJudge([failure])
    record = failed_execution(await failed_run(score_scorer(judge)))
    assert (record["attemptCount"], record["modelCallCount"]) == (1, 1)
    assert record["usage"] == {"inputTokens": 4, "outputTokens": 0, "totalTokens": 4}
    assert record["finishReason"] == "content_filter"


# ---------------------------------------------------- invalid JSON then a failing fallback


async def test_invalid_json_then_failing_fallback() -> None:
    judge = ScriptedJudge(["not valid JSON", JudgeProviderError("overloaded", status_code=529)])
    record = failed_execution(await failed_run(analyze_scorer(judge)))
    assert (record["attemptCount"], record["modelCallCount"]) == (2, 1)
    assert record["usage"] == USAGE_10_20_30
    assert record["rawOutput"] == "not valid JSON"
    assert "output" not in record
    assert record["error"]["name"] == "JudgeProviderError"


# ---------------------------------------------------------------- two invalid JSON replies


async def test_two_invalid_json_attempts() -> None:
    judge = ScriptedJudge(["first bad text", "second bad text"])
    error = await failed_run(analyze_scorer(judge))
    record = failed_execution(error)
    assert (record["attemptCount"], record["modelCallCount"]) == (2, 2)
    assert record["usage"] == USAGE_20_40_60
    assert record["rawOutput"] == "second bad text"
    assert record["finishReason"] == "error"
    assert "output" not in record
    assert record["error"]["code"] == "STRUCTURED_OUTPUT_JSON_PARSE_FAILED"
    # Evaluated content never goes into the error message.
    assert "second bad text" not in record["error"]["message"]


async def test_truncated_twice_keeps_finish_reason_length() -> None:
    usage = normalize_usage({"completionTokens": 5})
    cut = JudgeReply(text='{"ok":', finish_reason="length", usage=usage)
    judge = ScriptedJudge([cut, cut])
    record = failed_execution(await failed_run(analyze_scorer(judge)))
    assert record["finishReason"] == "length"
    assert record["error"]["code"] == "STRUCTURED_OUTPUT_TRUNCATED"
    assert record["usage"] == {"outputTokens": 10, "totalTokens": 10}


# -------------------------------------------------------- output kept after a late failure


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_output_validated_before_on_finish_failure_is_kept(
    asynchronous: bool,
) -> None:
    class CallbackFailed(Exception):
        pass

    def sync_finish(judge_reply: JudgeReply) -> None:
        raise CallbackFailed("callback broke")

    async def async_finish(judge_reply: JudgeReply) -> None:
        await asyncio.sleep(0)
        raise CallbackFailed("callback broke")

    judge = ScriptedJudge(['{"score": 1}'])
    scorer = score_scorer(judge, on_finish=async_finish if asynchronous else sync_finish)
    error = await failed_run(scorer)
    assert isinstance(error.__cause__, CallbackFailed)
    record = failed_execution(error)
    assert record["status"] == "failed"
    assert record["output"] == 1.0
    assert record["finishReason"] == "stop"
    assert record["rawOutput"] == '{"score": 1}'
    assert (record["attemptCount"], record["modelCallCount"]) == (1, 1)
    assert record["usage"] == USAGE_10_20_30
    assert record["error"] == {"name": "CallbackFailed", "message": "callback broke"}
    assert judge.calls == 1


# ------------------------------------------------------------------------- error summaries


async def test_error_summary_has_only_name_message_code() -> None:
    failure = JudgeProviderError(
        "rate limited", code="RATE_LIMITED", status_code=429, request_id="req-123", retry_after=3
    )
    judge = ScriptedJudge([failure])
    record = failed_execution(await failed_run(score_scorer(judge)))
    assert record["error"] == {
        "name": "JudgeProviderError",
        "message": "rate limited",
        "code": "RATE_LIMITED",
    }
    text = json.dumps(record)
    assert "req-123" not in text and "429" not in text


async def test_plain_exceptions_have_no_code_and_string_codes_are_kept() -> None:
    class WithCode(Exception):
        code = "E_CUSTOM"

    class WithNumericCode(Exception):
        code = 42

    for raised, expected in [
        (ValueError("plain"), {"name": "ValueError", "message": "plain"}),
        (WithCode("custom"), {"name": "WithCode", "message": "custom", "code": "E_CUSTOM"}),
        (WithNumericCode("numeric"), {"name": "WithNumericCode", "message": "numeric"}),
        (RuntimeError(), {"name": "RuntimeError", "message": "RuntimeError"}),
    ]:
        record = failed_execution(await failed_run(score_scorer(ScriptedJudge([raised]))))
        assert record["error"] == expected


# ------------------------------------------------------------------------- JSON round trip


async def test_judge_records_round_trip_through_json() -> None:
    judge = ScriptedJudge(["bad", '{"ok": true}', '{"score": 0.5}', "because"])
    scorer = (
        sw.create_scorer(id="rt", description="d", judge=judge_config(judge))
        .analyze(sw.PromptStep("a", lambda ctx: "p", output_schema=OBJECT))
        .generate_score(sw.PromptStep("s", lambda ctx: "p"))
        .generate_reason(sw.PromptStep("r", lambda ctx: "why"))
    )
    result = await scorer.run(output="o")
    assert result.judge is not None
    for record in result.judge.values():
        dumped = json.loads(json.dumps(record.model_dump(mode="json", by_alias=True)))
        assert JudgeStepRecord.model_validate(dumped) == record
    assert round_trip(result) == result
    assert json.loads(json.dumps(wire(result)["judge"])) == wire(result)["judge"]


async def test_failed_records_round_trip_through_json() -> None:
    judge = ScriptedJudge(["bad", JudgeProviderError("down", status_code=503)])
    error = await failed_run(analyze_scorer(judge))
    assert error.result is not None and error.result.judge is not None
    record = error.result.judge["analyze"]
    dumped = json.loads(json.dumps(record.model_dump(mode="json", by_alias=True)))
    assert JudgeStepRecord.model_validate(dumped) == record
    assert dumped["executions"][0]["status"] == "failed"


# ----------------------------------------------------------------------- judge record keys


async def test_judge_keys_follow_execution_order_and_only_prompt_steps() -> None:
    judge = ScriptedJudge(['{"a": 1}', '{"b": 2}', "reason"])
    schema = {"type": "object"}
    scorer = (
        sw.create_scorer(id="order", description="d", judge=judge_config(judge))
        .preprocess(sw.PromptStep("p", lambda ctx: "p", output_schema=schema))
        .analyze(sw.PromptStep("a", lambda ctx: "a", output_schema=schema))
        .generate_score(lambda ctx: 0.3)
        .generate_reason(sw.PromptStep("r", lambda ctx: "r"))
    )
    result = await scorer.run(output="o")
    assert result.judge is not None
    assert list(result.judge) == ["preprocess", "analyze", "generate_reason"]
    assert list(wire(result)["judge"]) == ["preprocess", "analyze", "generateReason"]
    assert result.generate_score_prompt is None


async def test_function_steps_never_create_records() -> None:
    judge = ScriptedJudge(['{"score": 1}'])
    scorer = (
        sw.create_scorer(id="mixed", description="d", judge=judge_config(judge))
        .preprocess(lambda ctx: {"x": 1})
        .generate_score(sw.PromptStep("s", lambda ctx: "p"))
        .generate_reason(lambda ctx: "r")
    )
    result = await scorer.run(output="o")
    assert list(wire(result)["judge"]) == ["generateScore"]


# ------------------------------------------------------------------ retries (error processors)


def _retrying(replies: list[Any], max_retries: int = 2) -> ScriptedJudge:
    policy = RetryPolicy(max_retries=max_retries, base_delay=0, jitter=False)
    return ScriptedJudge(replies, retry_policy=policy)


@pytest.mark.parametrize("status", [408, 429, 500, 503])
async def test_retryable_errors_are_retried_with_a_retry_policy(status: int) -> None:
    judge = _retrying(
        [JudgeProviderError("busy", status_code=status, retryable=True), '{"score": 1}']
    )
    result = await score_scorer(judge).run(output="o")
    record = executions(wire(result), "generateScore")[0]
    assert judge.calls == 2
    assert (record["status"], record["attemptCount"], record["modelCallCount"]) == ("success", 2, 1)
    assert record["usage"] == USAGE_10_20_30
    assert [r.attempt for r in judge.requests] == [1, 2]
    assert not any(r.fallback for r in judge.requests)


@pytest.mark.parametrize("status", [400, 401])
async def test_terminal_errors_are_never_retried(status: int) -> None:
    judge = _retrying([JudgeProviderError("no", status_code=status, retryable=False), "{}"])
    record = failed_execution(await failed_run(score_scorer(judge)))
    assert judge.calls == 1
    assert record["attemptCount"] == 1


async def test_retries_stop_at_the_policy_limit() -> None:
    busy = [JudgeProviderError("busy", status_code=503, retryable=True) for _ in range(5)]
    judge = _retrying(busy, max_retries=2)
    record = failed_execution(await failed_run(score_scorer(judge)))
    assert judge.calls == 3
    assert (record["attemptCount"], record["modelCallCount"]) == (3, 0)


async def test_without_a_retry_policy_nothing_is_retried() -> None:
    judge = ScriptedJudge([JudgeProviderError("busy", status_code=503, retryable=True), "{}"])
    await failed_run(score_scorer(judge))
    assert judge.calls == 1


async def test_failing_reason_step_does_not_rerun_the_score_step() -> None:
    busy = JudgeProviderError("busy", status_code=503, retryable=True)
    judge = _retrying(['{"score": 0.5}', busy, busy, busy])
    scorer = score_scorer(judge).generate_reason(sw.PromptStep("r", lambda ctx: "why"))
    error = await failed_run(scorer)
    assert [r.step for r in judge.requests] == ["generate_score"] + ["generate_reason"] * 3
    assert error.result is not None and error.result.score == 0.5


async def test_attempt_hooks_add_up_to_the_judge_record() -> None:
    busy = JudgeProviderError("busy", status_code=503, retryable=True)
    judge = _retrying([busy, "not json", '{"score": 0.25}'])
    with observing() as observer:
        result = await score_scorer(judge).run(output="o")
    attempts = observer.only.payloads("judge_attempt_finished")
    assert result.judge is not None
    record = result.judge["generate_score"].executions[0]
    assert len(attempts) == record.attempt_count == 3
    assert sum(a.model_call_count for a in attempts) == record.model_call_count == 2
    assert sum(a.usage.total_tokens or 0 for a in attempts) == record.usage.total_tokens == 60
    assert [type(a.error).__name__ if a.error else None for a in attempts] == [
        "JudgeProviderError",
        None,
        None,
    ]
    assert [a.fallback for a in attempts] == [False, False, True]


async def test_scripted_judge_callable_replies_route_on_the_request() -> None:
    def answer(request: JudgeRequest) -> str:
        return '{"ok": true}' if request.step == "analyze" else '{"score": 0.9}'

    judge = ScriptedJudge(answer)
    scorer = (
        sw.create_scorer(id="routed", description="d", judge=judge_config(judge))
        .analyze(sw.PromptStep("a", lambda ctx: "a", output_schema=OBJECT))
        .generate_score(sw.PromptStep("s", lambda ctx: "s"))
    )
    result = await scorer.run(output="o")
    assert (result.analyze_step_result, result.score) == ({"ok": True}, 0.9)
    assert judge.calls == 2


async def test_judge_error_subclass_is_a_scorewatch_error() -> None:
    assert issubclass(JudgeProviderError, JudgeError)
    assert issubclass(JudgeError, sw.ScorewatchError)


class _SloppyModel:
    """A hand-written JudgeModel that returns the wrong thing."""

    def __init__(self, returned: Any) -> None:
        self.returned = returned

    @property
    def model_id(self) -> str:
        return "sloppy"

    @property
    def provider(self) -> str | None:
        return None

    async def complete(self, request: JudgeRequest) -> Any:
        return self.returned


@pytest.mark.parametrize("returned", ['{"score": 1}', None, JudgeReply(text=None)])  # type: ignore[arg-type]
async def test_a_judge_model_returning_something_else_than_a_reply_fails_clearly(
    returned: Any,
) -> None:
    error = await failed_run(score_scorer(_SloppyModel(returned)))
    assert "'judged'" in error.message and "'generate_score'" in error.message
    assert "'sloppy'" in error.message and "JudgeReply" in error.message
    record = failed_execution(error)
    assert record["attemptCount"] == 1
    assert record["judgeModelId"] == "sloppy"
    assert "judgeProvider" not in record


async def test_scripted_judge_async_callable_custom_usage_and_ids() -> None:
    async def answer(request: JudgeRequest) -> str:
        await asyncio.sleep(0)
        return '{"score": 0.6}'

    usage = JudgeUsage(input_tokens=1, output_tokens=2, total_tokens=3)
    judge = ScriptedJudge(answer, model_id="my-judge", provider=None, usage=usage)
    result = await score_scorer(judge).run(output="o")
    record = executions(wire(result), "generateScore")[0]
    assert (record["judgeModelId"], record["usage"]) == (
        "my-judge",
        {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
    )
    assert "judgeProvider" not in record
    assert judge.calls == 1 and len(judge.requests) == 1


async def test_scripted_judge_is_a_judge_model() -> None:
    assert isinstance(ScriptedJudge([]), sw.JudgeModel)
    judge = ScriptedJudge(["text", ValueError("raised")])
    request = JudgeRequest(prompt="p", instructions="i", step="generate_reason")
    first = await judge.complete(request)
    assert (first.text, first.usage.as_dict()) == (
        "text",
        {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30},
    )
    with pytest.raises(ValueError, match="raised"):
        await judge.complete(request)
    with pytest.raises(AssertionError, match="ran out of replies at call 3"):
        await judge.complete(request)
    assert judge.calls == 3


async def test_a_later_provider_error_does_not_overwrite_a_concrete_finish_reason() -> None:
    cut = JudgeReply(
        text='{"ok":', finish_reason="length", usage=normalize_usage({"inputTokens": 3})
    )
    judge = ScriptedJudge([cut, JudgeProviderError("overloaded", status_code=529)])
    record = failed_execution(await failed_run(analyze_scorer(judge)))
    assert record["finishReason"] == "length"
    assert (record["attemptCount"], record["modelCallCount"]) == (2, 1)
    assert record["rawOutput"] == '{"ok":'
