"""Prompt-based scorers judged by the real litellm client over HTTP, against scripted faults.

Every fault must leave the judge record docs/reference-semantics.md describes and, where the step
fails, the `ScorerRunError` it describes; the same scenario through `ScriptedJudge` gives the same
record. Backoff is shortened (`base_delay=0.001`, `Retry-After: 0`) so the suite stays fast.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

import scorewatch as sw
from scorewatch.judge import JudgeProviderError, JudgeUsage, RetryPolicy
from scorewatch.testing import (
    DropConnection,
    HttpError,
    LoopbackJudgeServer,
    MalformedBody,
    Reply,
    ScriptedJudge,
)

pytestmark = pytest.mark.integration

SENTINEL = "sk-sentinel-faults-7d2e44b1"
MODEL = "openai/loopback-judge"
FAST_RETRIES = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01)
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
}
VALID_ANALYSIS = '{"verdict": "good"}'
USAGE_1 = {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30}
USAGE_2 = {"input_tokens": 20, "output_tokens": 40, "total_tokens": 60}


def judge_config(server: LoopbackJudgeServer, transport: str, **options: Any) -> sw.JudgeConfig:
    model_options: dict[str, Any] = {
        "transport": transport,
        "api_base": server.base_url,
        "api_key": SENTINEL,
        "timeout": 5.0,
        "retry_policy": FAST_RETRIES,
    }
    model_options.update(options)
    return sw.JudgeConfig(
        model=MODEL, instructions="You are a careful judge.", model_options=model_options
    )


def analyze_scorer(judge: sw.JudgeConfig) -> sw.Scorer:
    return (
        sw.create_scorer(id="quality", description="Judges answer quality", judge=judge)
        .analyze(
            sw.PromptStep(
                "Analyze the answer",
                lambda ctx: f"Analyze: {ctx.run.output}",
                output_schema=VERDICT_SCHEMA,
            )
        )
        .generate_score(lambda ctx: 1.0 if ctx.results.analyze_step_result["verdict"] else 0.0)
    )


def full_scorer(judge: sw.JudgeConfig) -> sw.Scorer:
    return (
        sw.create_scorer(id="quality", description="Judges answer quality", judge=judge)
        .analyze(
            sw.PromptStep(
                "Analyze the answer",
                lambda ctx: f"Analyze: {ctx.run.output}",
                output_schema=VERDICT_SCHEMA,
            )
        )
        .generate_score(sw.PromptStep("Score the analysis", lambda ctx: "Score it"))
        .generate_reason(sw.PromptStep("Explain the score", lambda ctx: f"Why {ctx.score}?"))
    )


async def run_failing(scorer: sw.Scorer) -> sw.ScorerRunError:
    with pytest.raises(sw.ScorerRunError) as caught:
        await scorer.run(input="What is 2+2?", output="4", run_id="run-1")
    return caught.value


def only_execution(record_holder: Any, step: str = "analyze") -> Any:
    assert record_holder.judge is not None
    executions = record_holder.judge[step].executions
    assert len(executions) == 1
    return executions[0]


# --- success paths ----------------------------------------------------------------------------


async def test_a_full_prompt_scorer_runs_over_http(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script(
        [
            Reply(VALID_ANALYSIS, cached_tokens=4, reasoning_tokens=2, cost=0.001),
            Reply('{"score": 0.8}', prompt_tokens=5, completion_tokens=1),
            Reply("Because it is right."),
        ]
    )
    result = await full_scorer(judge_config(server, transport)).run(input="2+2?", output="4")
    assert result.score == 0.8
    assert result.reason == "Because it is right."
    assert result.analyze_step_result == {"verdict": "good"}
    assert result.judge is not None
    analyze = only_execution(result)
    assert analyze.status == "success"
    assert analyze.judge_model_id == MODEL
    assert analyze.judge_provider == "openai"
    assert analyze.judge_transport == transport  # which client served it is in the record
    assert (analyze.attempt_count, analyze.model_call_count) == (1, 1)
    assert analyze.usage.as_dict() == {**USAGE_1, "reasoning_tokens": 2, "cached_input_tokens": 4}
    assert analyze.cost == sw.judge.JudgeCost(amount=0.001, unit="USD", source="provider")
    score = only_execution(result, "generate_score")
    assert score.output == 0.8
    assert score.usage.as_dict() == {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}
    assert score.cost is None  # the provider reported none; estimates never enter the record
    reason = only_execution(result, "generate_reason")
    assert reason.output == "Because it is right."
    assert server.request_count == 3
    wire = result.model_dump(mode="json", by_alias=True)
    assert wire["judge"]["analyze"]["executions"][0]["usage"]["cachedInputTokens"] == 4
    assert wire["judge"]["generateScore"]["executions"][0]["attemptCount"] == 1


def test_run_sync_works_against_the_server(server: LoopbackJudgeServer, transport: str) -> None:
    server.script(VALID_ANALYSIS)
    result = analyze_scorer(judge_config(server, transport)).run_sync(input="q", output="a")
    assert result.score == 1.0
    assert only_execution(result).status == "success"


async def test_invalid_json_then_valid_uses_the_one_fallback(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script(["not valid JSON", VALID_ANALYSIS])
    result = await analyze_scorer(judge_config(server, transport)).run(input="q", output="a")
    record = only_execution(result)
    assert record.status == "success"
    assert (record.attempt_count, record.model_call_count) == (2, 2)
    assert record.usage.as_dict() == USAGE_2
    assert server.request_count == 2
    fallback_system = server.requests[1].messages[0]["content"]
    assert "JSON schema" in fallback_system  # the fallback asks for JSON in the prompt


async def test_transient_error_is_retried_and_every_attempt_counts(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script([HttpError(429, retry_after=0), HttpError(503), VALID_ANALYSIS])
    result = await analyze_scorer(judge_config(server, transport)).run(input="q", output="a")
    record = only_execution(result)
    assert record.status == "success"
    assert record.attempt_count == 3
    assert record.model_call_count == 1  # only the call that reached the model
    assert record.usage.as_dict() == USAGE_1
    assert server.request_count == 3  # one HTTP request per attempt: no hidden retries


async def test_retry_after_is_honoured_instead_of_the_backoff(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    # With an hour of backoff and no jitter, only honouring `Retry-After: 0` finishes in time.
    patient = RetryPolicy(max_retries=1, base_delay=3600, max_delay=3600, jitter=False)
    server.script([HttpError(429, retry_after=0), VALID_ANALYSIS])
    async with asyncio.timeout(30):
        result = await analyze_scorer(judge_config(server, transport, retry_policy=patient)).run(
            input="q", output="a"
        )
    assert only_execution(result).attempt_count == 2


async def test_invalid_json_then_rate_limit_then_valid(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script(["not valid JSON", HttpError(429, retry_after=0), VALID_ANALYSIS])
    result = await analyze_scorer(judge_config(server, transport)).run(input="q", output="a")
    record = only_execution(result)
    assert record.status == "success"
    assert (record.attempt_count, record.model_call_count) == (3, 2)
    assert record.usage.as_dict() == USAGE_2


async def test_usage_sums_cached_and_reasoning_tokens_across_attempts(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(
        [
            Reply("not valid JSON", cached_tokens=3, reasoning_tokens=1),
            Reply(VALID_ANALYSIS, cached_tokens=5, cache_creation_tokens=2),
        ]
    )
    result = await analyze_scorer(judge_config(server, transport)).run(input="q", output="a")
    assert only_execution(result).usage.as_dict() == {
        **USAGE_2,
        "reasoning_tokens": 1,
        "cached_input_tokens": 8,
        "cache_creation_input_tokens": 2,
    }


# --- failures ---------------------------------------------------------------------------------

TRANSIENT = [
    ("408", HttpError(408), "TIMEOUT"),
    ("429", HttpError(429, retry_after=0), "RATE_LIMITED"),
    ("500", HttpError(500), "PROVIDER_ERROR"),
    ("502", HttpError(502), "PROVIDER_UNAVAILABLE"),
    ("503", HttpError(503), "PROVIDER_UNAVAILABLE"),
    ("504", HttpError(504), "PROVIDER_UNAVAILABLE"),
    ("drop", DropConnection(), "CONNECTION_ERROR"),
    ("malformed", MalformedBody(), "MALFORMED_RESPONSE"),
    ("slow", Reply(VALID_ANALYSIS, delay=3), "TIMEOUT"),
]


@pytest.mark.parametrize(
    ("behaviour", "code"), [t[1:] for t in TRANSIENT], ids=[t[0] for t in TRANSIENT]
)
async def test_a_transient_fault_then_success_is_recovered(
    server: LoopbackJudgeServer, transport: str, behaviour: Any, code: str
) -> None:
    server.script([behaviour, VALID_ANALYSIS])
    result = await analyze_scorer(judge_config(server, transport, timeout=0.5)).run(
        input="q", output="a"
    )
    record = only_execution(result)
    assert record.status == "success"
    assert (record.attempt_count, record.model_call_count) == (2, 1)
    assert record.usage.as_dict() == USAGE_1
    assert server.request_count == 2


@pytest.mark.parametrize(
    ("behaviour", "code"), [t[1:] for t in TRANSIENT], ids=[t[0] for t in TRANSIENT]
)
async def test_a_persistent_transient_fault_fails_after_max_retries(
    server: LoopbackJudgeServer, transport: str, behaviour: Any, code: str
) -> None:
    server.script(behaviour)
    error = await run_failing(analyze_scorer(judge_config(server, transport, timeout=0.5)))
    assert error.failed_step == "analyze"
    assert error.completed_steps == []
    assert error.code == "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED"
    assert isinstance(error.__cause__, sw.JudgeError)
    assert error.__cause__.code == code
    assert error.result is not None
    record = only_execution(error.result)
    assert record.status == "failed"
    assert record.attempt_count == 3  # 1 + max_retries
    assert record.model_call_count == 0
    assert record.usage is None
    assert record.raw_output is None
    assert record.output is None
    assert record.finish_reason == "error"
    assert record.error.code == code
    assert record.error.name == type(error.__cause__).__name__
    assert record.judge_transport == transport
    assert server.request_count == 3


TERMINAL = [
    ("400", HttpError(400), "BAD_REQUEST", 400),
    ("401", HttpError(401), "AUTHENTICATION_FAILED", 401),
    ("403", HttpError(403), "PERMISSION_DENIED", 403),
    ("404", HttpError(404), "MODEL_NOT_FOUND", 404),
    ("context", HttpError.context_length_exceeded(), "CONTEXT_LENGTH_EXCEEDED", 400),
]


@pytest.mark.parametrize(
    ("behaviour", "code", "status"), [t[1:] for t in TERMINAL], ids=[t[0] for t in TERMINAL]
)
async def test_a_terminal_fault_is_never_retried(
    server: LoopbackJudgeServer, transport: str, behaviour: Any, code: str, status: int
) -> None:
    server.script([behaviour, VALID_ANALYSIS])
    error = await run_failing(analyze_scorer(judge_config(server, transport)))
    assert error.result is not None
    record = only_execution(error.result)
    assert record.status == "failed"
    assert (record.attempt_count, record.model_call_count) == (1, 0)
    assert record.error.code == code
    assert record.finish_reason == "error"
    assert server.request_count == 1
    cause = error.__cause__
    assert isinstance(cause, JudgeProviderError)
    assert cause.status_code == status
    assert cause.retryable is False
    assert cause.__cause__ is not None  # the provider's own exception, one level further down


async def test_max_retries_zero_reproduces_the_reference_accounting(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script([HttpError(429, retry_after=0), VALID_ANALYSIS])
    error = await run_failing(
        analyze_scorer(judge_config(server, transport, retry_policy=None, max_retries=0))
    )
    assert error.result is not None
    record = only_execution(error.result)
    # Reference table: "provider error, no response" -> failed, 1 attempt, 0 calls, no usage.
    assert (record.status, record.attempt_count, record.model_call_count) == ("failed", 1, 0)
    assert record.usage is None
    assert record.finish_reason == "error"
    assert record.raw_output is None
    assert server.request_count == 1


async def test_invalid_json_twice_fails_with_both_calls_counted(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(["not valid JSON", '{"verdict": 3}'])
    error = await run_failing(analyze_scorer(judge_config(server, transport)))
    assert error.result is not None
    record = only_execution(error.result)
    assert (record.status, record.attempt_count, record.model_call_count) == ("failed", 2, 2)
    assert record.usage is not None and record.usage.as_dict() == USAGE_2
    assert record.raw_output == '{"verdict": 3}'
    assert record.output is None  # raw output is never parsed into output
    assert record.finish_reason == "error"
    assert record.error.code == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"


async def test_invalid_json_then_fallback_provider_error(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script(["not valid JSON", HttpError(400)])
    error = await run_failing(analyze_scorer(judge_config(server, transport)))
    assert error.result is not None
    record = only_execution(error.result)
    assert (record.status, record.attempt_count, record.model_call_count) == ("failed", 2, 1)
    assert record.usage is not None and record.usage.as_dict() == USAGE_1
    assert record.raw_output == "not valid JSON"
    assert record.error.code == "BAD_REQUEST"


async def test_truncated_json_is_a_failed_attempt_not_a_silent_zero(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    truncated = Reply('{"verdict": "go', finish_reason="length")
    server.script([truncated, truncated])
    error = await run_failing(analyze_scorer(judge_config(server, transport)))
    assert error.result is not None
    assert error.result.score is None
    record = only_execution(error.result)
    assert (record.status, record.attempt_count, record.model_call_count) == ("failed", 2, 2)
    assert record.finish_reason == "length"
    assert record.raw_output == '{"verdict": "go'
    assert record.error.code == "STRUCTURED_OUTPUT_TRUNCATED"


async def test_truncated_then_valid_recovers_through_the_fallback(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script([Reply('{"verdict": "go', finish_reason="length"), VALID_ANALYSIS])
    result = await analyze_scorer(judge_config(server, transport)).run(input="q", output="a")
    record = only_execution(result)
    assert (record.status, record.attempt_count, record.model_call_count) == ("success", 2, 2)


async def test_reason_step_failure_keeps_the_score_record(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script([VALID_ANALYSIS, '{"score": 0}', HttpError(400)])
    error = await run_failing(full_scorer(judge_config(server, transport)))
    assert error.failed_step == "generate_reason"
    assert error.completed_steps == ["analyze", "generate_score"]
    assert error.result is not None
    assert error.result.score == 0
    assert only_execution(error.result, "generate_score").status == "success"
    reason = only_execution(error.result, "generate_reason")
    assert (reason.status, reason.attempt_count, reason.model_call_count) == ("failed", 1, 0)
    assert reason.usage is None
    assert error.result.judge is not None
    total_input = sum(
        (execution.usage.input_tokens or 0) if execution.usage is not None else 0
        for record in error.result.judge.values()
        for execution in record.executions
    )
    assert total_input == 20  # analyze + score; the failed reason call reached no model


async def test_streaming_judge_gives_the_same_record(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script(["not valid JSON", Reply(VALID_ANALYSIS, cost=0.5)])
    result = await analyze_scorer(judge_config(server, transport, stream=True)).run(
        input="q", output="a"
    )
    record = only_execution(result)
    assert (record.status, record.attempt_count, record.model_call_count) == ("success", 2, 2)
    assert record.usage.input_tokens == 20
    assert record.cost == sw.judge.JudgeCost(amount=0.5, unit="USD", source="provider")
    assert all(request.body["stream"] is True for request in server.requests)


# --- same semantics as ScriptedJudge ----------------------------------------------------------


def _comparable(record: Any) -> dict[str, Any]:
    data: dict[str, Any] = record.model_dump(mode="json")
    for key in ("duration_ms", "judge_model_id", "judge_provider", "judge_transport", "prompt"):
        data.pop(key, None)
    if isinstance(data.get("error"), dict):
        data["error"].pop("message", None)
    return data


SCENARIOS = [
    ("valid", ["V"], None),
    ("fallback", ["not valid JSON", "V"], None),
    ("invalid twice", ["not valid JSON", "nope"], "STRUCTURED_OUTPUT_JSON_PARSE_FAILED"),
    ("429 then valid", ["429", "V"], None),
    ("persistent 503", ["503", "503", "503"], "PROVIDER_UNAVAILABLE"),
    ("json then 400", ["not valid JSON", "400"], "BAD_REQUEST"),
]


def _server_behaviour(step: str) -> Any:
    if step == "V":
        return VALID_ANALYSIS
    if step.isdigit():
        return HttpError(int(step), retry_after=0 if step == "429" else None)
    return step


def _scripted_behaviour(step: str) -> Any:
    if step == "V":
        return VALID_ANALYSIS
    if step.isdigit():
        codes = {"429": "RATE_LIMITED", "503": "PROVIDER_UNAVAILABLE", "400": "BAD_REQUEST"}
        retryable = step != "400"
        return JudgeProviderError(
            f"HTTP {step}",
            code=codes[step],
            status_code=int(step),
            retryable=retryable,
            retry_after=0 if step == "429" else None,
        )
    return step


@pytest.mark.parametrize(
    ("script", "code"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
async def test_records_match_the_scripted_judge(
    server: LoopbackJudgeServer, transport: str, script: list[str], code: str | None
) -> None:
    server.script([_server_behaviour(step) for step in script])
    scripted = ScriptedJudge(
        [_scripted_behaviour(step) for step in script],
        usage=JudgeUsage(input_tokens=10, output_tokens=20, total_tokens=30),
        retry_policy=FAST_RETRIES,
    )
    records = []
    for judge in (
        judge_config(server, transport),
        sw.JudgeConfig(model=scripted, instructions="Judge."),
    ):
        try:
            result: Any = await analyze_scorer(judge).run(input="q", output="a")
        except sw.ScorerRunError as error:
            assert error.__cause__ is not None
            assert getattr(error.__cause__, "code", None) == code
            result = error.result
        else:
            assert code is None
        records.append(_comparable(only_execution(result)))
    over_http, scripted_record = records
    assert over_http == scripted_record
    assert server.request_count == len(script)


# --- secrets ----------------------------------------------------------------------------------


async def test_the_api_key_appears_nowhere(
    server: LoopbackJudgeServer, transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script(
        [
            VALID_ANALYSIS,
            '{"score": 1}',
            "Fine.",
            HttpError(401),
            "not valid JSON",
            HttpError(429, retry_after=0),
            DropConnection(),
            MalformedBody(),
        ]
    )
    judge = judge_config(
        server, transport, retry_policy=RetryPolicy(max_retries=2, base_delay=0.001)
    )
    scorer = full_scorer(judge)
    result = await scorer.run(input="q", output="a")
    texts = [result.model_dump_json(), result.model_dump_json(by_alias=True), repr(result)]
    texts += [repr(judge), str(judge), repr(scorer), str(scorer.judge)]
    for _ in range(2):  # a terminal failure, then a retried one
        failed = await run_failing(analyze_scorer(judge))
        texts += [str(failed), repr(failed), json.dumps(failed.to_dict(), default=str)]
        assert failed.result is not None
        texts += [failed.result.model_dump_json(by_alias=True), repr(failed.result)]
        cause: BaseException | None = failed
        while cause is not None:
            texts += [repr(cause)]
            if isinstance(cause, sw.ScorewatchError):
                texts += [str(cause), json.dumps(cause.to_dict(), default=str)]
            cause = cause.__cause__
    if transport == "litellm":
        assert any(record.name == "LiteLLM" for record in caplog.records)  # litellm's logs seen
    texts.append(caplog.text)
    texts += [repr(request) for request in server.requests]
    assert server.request_count == 8
    for text in texts:
        assert SENTINEL not in text
    # and it was really sent: every request carried an Authorization header
    assert all("authorization" in request.header_names for request in server.requests)


async def test_a_stream_broken_midway_counts_as_a_model_call(
    server: LoopbackJudgeServer, transport: str
) -> None:
    broken = Reply(VALID_ANALYSIS, chunk_size=4, drop_after_chunks=2)
    server.script([broken, VALID_ANALYSIS])
    result = await analyze_scorer(judge_config(server, transport, stream=True)).run(
        input="q", output="a"
    )
    record = only_execution(result)
    assert (record.status, record.attempt_count, record.model_call_count) == ("success", 2, 2)
    # the broken stream reported no usage (litellm adds reasoning_tokens=0 on streams)
    assert {key: record.usage.as_dict()[key] for key in USAGE_1} == USAGE_1

    server.script(broken)
    error = await run_failing(analyze_scorer(judge_config(server, transport, stream=True)))
    assert error.result is not None
    failed = only_execution(error.result)
    assert (failed.status, failed.attempt_count, failed.model_call_count) == ("failed", 3, 3)
    assert failed.raw_output == '{"ve'
    assert failed.output is None
    assert failed.error.code == "CONNECTION_ERROR"
