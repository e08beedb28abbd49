"""LiteLLMJudge against the loopback judge server, on both paths: litellm and the fast path.

Every test that makes a call runs once per transport (`openai_http`, scorewatch's own client,
and `litellm`), so both must give the same replies, errors and codes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from email.utils import formatdate
from typing import Any

import pytest

from scorewatch.judge import (
    JudgeCost,
    JudgeError,
    JudgeModel,
    JudgeProviderError,
    JudgeRequest,
    JudgeTimeoutError,
    LiteLLMJudge,
    RetryPolicy,
    normalize_usage,
)
from scorewatch.judge.provider_errors import parse_retry_after
from scorewatch.testing import (
    DropConnection,
    HttpError,
    LoopbackJudgeServer,
    MalformedBody,
    Reply,
)

pytestmark = pytest.mark.integration

SENTINEL = "sk-sentinel-litellm-5e1b9a"
UNKNOWN_MODEL = "openai/loopback-judge"  # not in litellm's price table
PRICED_MODEL = "openai/gpt-4o-mini"  # in litellm's bundled price table
SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}},
    "required": ["score"],
}


def score_request(**overrides: Any) -> JudgeRequest:
    fields: dict[str, Any] = {
        "prompt": "Rate the answer.",
        "instructions": "You are a strict judge.",
        "step": "generate_score",
        "schema": SCORE_SCHEMA,
    }
    fields.update(overrides)
    return JudgeRequest(**fields)


def judge_for(
    server: LoopbackJudgeServer, transport: str, model: str = UNKNOWN_MODEL, **options: Any
) -> LiteLLMJudge:
    options.setdefault("timeout", 5.0)
    judge = LiteLLMJudge(
        model, api_base=server.base_url, api_key=SENTINEL, transport=transport, **options
    )
    assert judge.transport == transport
    return judge


def test_importing_scorewatch_does_not_import_litellm() -> None:
    code = (
        "import sys, scorewatch, scorewatch.judge, scorewatch.testing\n"
        "judge = scorewatch.judge.LiteLLMJudge('openai/x', api_key='k')\n"
        "assert judge.provider == 'openai'\n"
        "assert 'litellm' not in sys.modules, 'litellm imported eagerly'\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert completed.returncode == 0, completed.stderr


@pytest.mark.parametrize(("given", "seen"), [(None, "True"), ("False", "False")])
def test_importing_scorewatch_makes_the_local_price_table_the_default(
    given: str | None, seen: str
) -> None:
    """`import litellm` after `import scorewatch` (a user registering prices) reads litellm's
    bundled table instead of downloading one, unless the environment says otherwise."""
    code = "import os, scorewatch\nprint(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))\n"
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    if given is not None:
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = given
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == seen


@pytest.mark.parametrize("transport", ["openai_http", "litellm"])
def test_a_sync_run_exits_without_an_unclosed_session(transport: str) -> None:
    """`run_sync` uses scorewatch's background loop; at exit its HTTP sessions are closed on
    that loop, so the interpreter prints nothing (no "Unclosed client session" traceback)."""
    code = (
        "import sys\n"
        "import scorewatch as sw\n"
        "judge = sw.JudgeConfig(model='openai/loopback-judge', instructions='Judge.',\n"
        "    model_options={'api_base': sys.argv[1], 'api_key': 'sk-test',\n"
        "                   'transport': sys.argv[2]})\n"
        "scorer = sw.create_scorer(id='exit', judge=judge).generate_score(\n"
        "    sw.PromptStep('rate', lambda ctx: f'Rate: {ctx.run.output}'))\n"
        "print(scorer.run_sync(input='q', output='a').score)\n"
    )
    with LoopbackJudgeServer([Reply('{"score": 0.5}')]) as server:
        env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
        completed = subprocess.run(
            [sys.executable, "-c", code, server.base_url, transport],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "0.5"
    assert completed.stderr == ""


def test_it_is_a_judge_model_with_a_default_retry_policy() -> None:
    judge = LiteLLMJudge("openai/gpt-4o-mini")
    assert isinstance(judge, JudgeModel)
    assert judge.model_id == "openai/gpt-4o-mini"
    assert judge.provider == "openai"
    assert judge.retry_policy == RetryPolicy(max_retries=2)
    assert judge.timeout == 60.0
    assert LiteLLMJudge("m", max_retries=0).retry_policy.max_retries == 0
    custom = RetryPolicy(max_retries=5, base_delay=0.001)
    assert LiteLLMJudge("m", retry_policy=custom).retry_policy is custom
    assert LiteLLMJudge("claude-3-5-sonnet").provider == "anthropic"
    assert LiteLLMJudge("x/y", custom_llm_provider="openai").provider == "openai"


def test_repr_never_shows_the_api_key() -> None:
    judge = LiteLLMJudge("openai/x", api_key=SENTINEL, headers={"X-Key": SENTINEL})
    assert SENTINEL not in repr(judge)
    assert SENTINEL not in str(judge)
    assert SENTINEL not in repr(judge.options)
    assert judge.options["api_key"] == "***"


async def test_reply_carries_text_usage_cost_and_response_metadata(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(
        Reply(
            '{"score": 0.75}',
            prompt_tokens=120,
            completion_tokens=30,
            cached_tokens=100,
            reasoning_tokens=12,
            cache_creation_tokens=8,
            cost=0.0042,
            response_id="chatcmpl-abc",
            model="loopback-judge-2026",
        )
    )
    reply = await judge_for(server, transport).complete(score_request())
    assert reply.text == '{"score": 0.75}'
    assert reply.finish_reason == "stop"
    assert reply.model_call_count == 1
    assert reply.usage.as_dict() == {
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
        "reasoning_tokens": 12,
        "cached_input_tokens": 100,
        "cache_creation_input_tokens": 8,
    }
    assert reply.cost == JudgeCost(amount=0.0042, unit="USD", source="provider")
    assert reply.estimated_cost_usd is None  # unknown model: no estimate, no error
    assert reply.response_id == "chatcmpl-abc"
    assert reply.response_model == "loopback-judge-2026"
    assert reply.server_address == "127.0.0.1"
    assert reply.server_port == server.port


async def test_no_provider_cost_means_no_cost_but_a_price_table_estimate(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(Reply('{"score": 1}', prompt_tokens=1000, completion_tokens=100))
    reply = await judge_for(server, transport, PRICED_MODEL).complete(score_request())
    assert reply.cost is None
    assert reply.estimated_cost_usd is not None
    assert reply.estimated_cost_usd > 0


async def test_the_estimate_comes_from_the_price_table_not_the_provider_cost(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(Reply('{"score": 1}', prompt_tokens=1000, completion_tokens=100, cost=7.5))
    reply = await judge_for(server, transport, PRICED_MODEL).complete(score_request())
    assert reply.cost is not None and reply.cost.amount == 7.5
    assert reply.estimated_cost_usd is not None
    assert reply.estimated_cost_usd < 0.01


async def test_registered_prices_and_capabilities_are_used(
    server: LoopbackJudgeServer, transport: str
) -> None:
    import litellm

    model = "openai/registered-loopback-judge"
    litellm.register_model(
        {
            model: {
                "input_cost_per_token": 1e-6,
                "output_cost_per_token": 2e-6,
                "litellm_provider": "openai",
                "mode": "chat",
                "supports_response_schema": True,
            }
        }
    )
    try:
        server.script(Reply('{"score": 1}', prompt_tokens=1000, completion_tokens=500))
        reply = await judge_for(server, transport, model).complete(score_request())
    finally:
        litellm.model_cost.pop(model, None)
    assert reply.estimated_cost_usd == pytest.approx(1000 * 1e-6 + 500 * 2e-6)
    sent = server.requests[-1].body
    assert sent["response_format"]["type"] == "json_schema"  # "auto" chose the native format


async def test_unknown_model_gets_the_schema_in_the_system_prompt(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script('{"score": 1}')
    await judge_for(server, transport).complete(score_request())
    sent = server.requests[-1].body
    assert "response_format" not in sent
    system, user = sent["messages"]
    assert system["role"] == "system"
    assert system["content"].startswith("You are a strict judge.")
    assert '"score"' in system["content"]
    assert user == {"role": "user", "content": "Rate the answer."}


async def test_native_structured_output_sends_a_json_schema_response_format(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script('{"score": 1}')
    await judge_for(server, transport, native_structured_output=True).complete(score_request())
    sent = server.requests[-1].body
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "generate_score_output", "schema": SCORE_SCHEMA, "strict": False},
    }
    assert sent["messages"] == [
        {"role": "system", "content": "You are a strict judge."},
        {"role": "user", "content": "Rate the answer."},
    ]


async def test_inline_and_forced_injection_override_native_support(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script('{"score": 1}')
    judge = judge_for(server, transport, native_structured_output=True)
    await judge.complete(score_request(json_prompt_injection="inline"))
    await judge.complete(score_request(json_prompt_injection=True, fallback=True))
    inline, forced = (request.body for request in server.requests)
    assert "response_format" not in inline
    assert '"score"' in inline["messages"][-1]["content"]
    assert inline["messages"][0]["content"] == "You are a strict judge."
    assert "response_format" not in forced
    assert '"score"' in forced["messages"][0]["content"]


async def test_plain_text_request_has_no_schema_anywhere(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script("Because the answer is correct.")
    reply = await judge_for(server, transport, native_structured_output=True).complete(
        score_request(step="generate_reason", schema=None)
    )
    assert reply.text == "Because the answer is correct."
    sent = server.requests[-1].body
    assert "response_format" not in sent
    assert "schema" not in sent["messages"][0]["content"].lower()


async def test_options_pass_through_but_hidden_retries_stay_off(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(HttpError(429))
    judge = judge_for(server, transport, temperature=0, max_tokens=64, max_retries=4)
    assert judge.retry_policy.max_retries == 4  # our retries, run by the core
    with pytest.raises(JudgeProviderError):
        await judge.complete(score_request())
    assert server.request_count == 1  # litellm/openai did not retry on their own
    sent = server.requests[0].body
    assert sent["temperature"] == 0
    assert sent["max_tokens"] == 64


async def test_finish_reason_length_is_reported(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script(Reply('{"score": 0.', finish_reason="length"))
    reply = await judge_for(server, transport).complete(score_request())
    assert reply.finish_reason == "length"
    assert reply.text == '{"score": 0.'


def _retry_after_now() -> str:
    return formatdate(usegmt=True)


FAULTS: list[tuple[str, Any, type[JudgeError], str, bool, int | None]] = [
    ("400", HttpError(400), JudgeProviderError, "BAD_REQUEST", False, 400),
    ("401", HttpError(401), JudgeProviderError, "AUTHENTICATION_FAILED", False, 401),
    ("403", HttpError(403), JudgeProviderError, "PERMISSION_DENIED", False, 403),
    ("404", HttpError(404), JudgeProviderError, "MODEL_NOT_FOUND", False, 404),
    ("408", HttpError(408), JudgeTimeoutError, "TIMEOUT", True, 408),
    ("422", HttpError(422), JudgeProviderError, "BAD_REQUEST", False, 422),
    ("429", HttpError(429), JudgeProviderError, "RATE_LIMITED", True, 429),
    ("500", HttpError(500), JudgeProviderError, "PROVIDER_ERROR", True, 500),
    ("502", HttpError(502), JudgeProviderError, "PROVIDER_UNAVAILABLE", True, 502),
    ("503", HttpError(503), JudgeProviderError, "PROVIDER_UNAVAILABLE", True, 503),
    ("504", HttpError(504), JudgeProviderError, "PROVIDER_UNAVAILABLE", True, 504),
    (
        "context",
        HttpError.context_length_exceeded(),
        JudgeProviderError,
        "CONTEXT_LENGTH_EXCEEDED",
        False,
        400,
    ),
    ("drop", DropConnection(), JudgeProviderError, "CONNECTION_ERROR", True, None),
    ("malformed", MalformedBody(), JudgeProviderError, "MALFORMED_RESPONSE", True, None),
    (
        "html",
        MalformedBody("<html>oops</html>", content_type="text/html"),
        JudgeProviderError,
        "MALFORMED_RESPONSE",
        True,
        None,
    ),
]


@pytest.mark.parametrize(
    ("behaviour", "error_type", "code", "retryable", "status"),
    [fault[1:] for fault in FAULTS],
    ids=[fault[0] for fault in FAULTS],
)
async def test_each_fault_maps_to_a_stable_code_after_exactly_one_request(
    server: LoopbackJudgeServer,
    transport: str,
    behaviour: Any,
    error_type: type[JudgeError],
    code: str,
    retryable: bool,
    status: int | None,
) -> None:
    server.script(behaviour)
    with pytest.raises(JudgeError) as caught:
        await judge_for(server, transport).complete(score_request())
    error = caught.value
    assert type(error) is error_type
    assert error.code == code
    assert error.retryable is retryable
    assert error.status_code == status
    assert error.domain == "JUDGE"
    assert server.request_count == 1
    # the client's own exception is kept as the cause
    cause_module = type(error.__cause__).__module__
    expected = ("litellm",) if transport == "litellm" else ("scorewatch.judge", "aiohttp", "json")
    assert cause_module.startswith(expected), cause_module
    rendered = f"{error} {error!r} {error.to_dict()}"
    assert SENTINEL not in rendered
    assert "loopback judge:" not in rendered  # the response body's message is never copied
    assert "oops" not in rendered
    assert error.to_dict()["cause"] == {"name": type(error.__cause__).__name__}


async def test_retry_after_is_parsed_from_the_rate_limit_answer(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(
        [
            HttpError(429, retry_after=3),
            HttpError(503, retry_after=0.5),
            HttpError(429, headers={"retry-after-ms": "250"}),
            HttpError(429),
        ]
    )
    judge = judge_for(server, transport)
    seen = []
    for _ in range(4):
        with pytest.raises(JudgeError) as caught:
            await judge.complete(score_request())
        seen.append(caught.value.retry_after)
    assert seen == [3.0, 0.5, 0.25, None]
    assert server.request_count == 4


def test_parse_retry_after_handles_dates_and_garbage() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "-1"}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    in_the_past = parse_retry_after({"retry-after": _retry_after_now()})
    assert in_the_past is not None and 0.0 <= in_the_past <= 1.0
    future = parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0)
    assert future == pytest.approx(10.0)


async def test_a_slow_provider_times_out(server: LoopbackJudgeServer, transport: str) -> None:
    server.script(Reply('{"score": 1}', delay=5))
    with pytest.raises(JudgeTimeoutError) as caught:
        await judge_for(server, transport, timeout=0.3).complete(score_request())
    assert caught.value.code == "TIMEOUT"
    assert caught.value.retryable is True
    assert server.request_count == 1


async def test_a_closed_port_is_a_connection_error() -> None:
    server = LoopbackJudgeServer().start()
    base_url = server.base_url
    server.stop()
    judge = LiteLLMJudge(UNKNOWN_MODEL, api_base=base_url, api_key=SENTINEL, timeout=5)
    with pytest.raises(JudgeProviderError) as caught:
        await judge.complete(score_request())
    assert caught.value.code == "CONNECTION_ERROR"
    assert caught.value.retryable is True


async def test_streaming_collects_text_usage_and_the_provider_cost(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(
        Reply('{"score": 0.25}', chunk_size=3, cached_tokens=4, reasoning_tokens=6, cost=0.25)
    )
    reply = await judge_for(server, transport, stream=True).complete(score_request())
    assert reply.text == '{"score": 0.25}'
    assert reply.finish_reason == "stop"
    assert reply.usage.input_tokens == 10
    assert reply.usage.output_tokens == 20
    assert reply.usage.cached_input_tokens == 4
    assert reply.usage.reasoning_tokens == 6
    assert reply.cost == JudgeCost(amount=0.25, unit="USD", source="provider")
    sent = server.requests[-1].body
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


async def test_streaming_never_mistakes_litellms_own_bill_for_a_provider_cost(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    # On streams litellm writes its own computed cost into usage.cost; that is an estimate.
    server.script(Reply('{"score": 1}', finish_reason="length"))
    reply = await judge_for(server, transport, PRICED_MODEL, stream=True).complete(score_request())
    assert reply.cost is None
    assert reply.estimated_cost_usd is not None and reply.estimated_cost_usd > 0
    assert reply.finish_reason == "length"


async def test_a_stream_that_stalls_times_out(server: LoopbackJudgeServer, transport: str) -> None:
    server.script(Reply("a long answer", chunk_size=1, chunk_delay=0.2))
    with pytest.raises(JudgeTimeoutError):
        await judge_for(server, transport, stream=True, timeout=0.3).complete(score_request())


def test_normalize_usage_reads_nested_provider_details_and_keeps_flat_keys_first() -> None:
    usage = normalize_usage(
        {
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 4, "cache_creation_tokens": 2},
            "completion_tokens_details": {"reasoning_tokens": 3},
        }
    )
    assert usage.as_dict() == {
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "reasoning_tokens": 3,
        "cached_input_tokens": 4,
        "cache_creation_input_tokens": 2,
    }
    anthropic = normalize_usage(
        {
            "input_tokens": 9,
            "output_tokens": 1,
            "cache_read_input_tokens": 6,
            "cache_creation_input_tokens": 3,
        }
    )
    assert anthropic.cached_input_tokens == 6
    assert anthropic.cache_creation_input_tokens == 3
    flat_wins = normalize_usage(
        {"cachedInputTokens": 1, "prompt_tokens_details": {"cached_tokens": 99}}
    )
    assert flat_wins.cached_input_tokens == 1
    assert normalize_usage({"prompt_tokens_details": None}).is_empty()
    assert normalize_usage({"promptTokens": 2}).as_dict() == {"input_tokens": 2, "total_tokens": 2}


async def test_a_reply_without_usage_has_empty_usage(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script(Reply('{"score": 1}', include_usage=False))
    reply = await judge_for(server, transport, PRICED_MODEL).complete(score_request())
    assert reply.usage.is_empty()
    assert reply.estimated_cost_usd is None


async def test_a_stream_broken_midway_keeps_the_partial_answer_as_evidence(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(Reply('{"score": 0.123456789}', chunk_size=4, drop_after_chunks=3))
    with pytest.raises(JudgeProviderError) as caught:
        await judge_for(server, transport, stream=True).complete(score_request())
    error = caught.value
    assert error.code == "CONNECTION_ERROR"
    assert error.retryable is True
    assert error.text == '{"score"'  # the role chunk, then two 4-character pieces
    assert error.model_call_count == 1
    assert error.usage is None


async def test_a_stalled_stream_times_out_with_its_partial_answer(
    server: LoopbackJudgeServer,
    transport: str,
) -> None:
    server.script(Reply("abcdefghijklmnopqrstuvwxyz", chunk_size=1, chunk_delay=0.1))
    with pytest.raises(JudgeTimeoutError) as caught:
        await judge_for(server, transport, stream=True, timeout=0.2).complete(score_request())
    assert caught.value.text is not None
    assert "abcdefghijklmnopqrstuvwxyz".startswith(caught.value.text)
    assert caught.value.model_call_count == 1
