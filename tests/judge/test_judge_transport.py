"""Which client serves a judge, that both give the same reply, prices read once, and API keys.

The fast path (`openai_http`, scorewatch's own chat-completions client) and litellm are driven
against the same loopback server; the fault matrix itself runs on both paths in
test_judge_faults.py and test_litellm_judge.py.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import scorewatch as sw
from scorewatch.judge import JudgeProviderError, JudgeRequest, JudgeUsage, LiteLLMJudge
from scorewatch.judge.prices import estimate_cost, import_litellm, model_facts
from scorewatch.testing import HttpError, LoopbackJudgeServer, Reply
from serve_support import run_serve, write_config

pytestmark = pytest.mark.e2e

KEY = "sk-transport-sentinel-41c9"
SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}


def request(**overrides: Any) -> JudgeRequest:
    fields: dict[str, Any] = {
        "prompt": "Rate it.",
        "instructions": "Judge.",
        "step": "generate_score",
        "schema": SCHEMA,
    }
    fields.update(overrides)
    return JudgeRequest(**fields)


# --- routing ----------------------------------------------------------------------------------


def test_auto_takes_the_fast_path_only_where_it_serves_the_request_as_litellm_would() -> None:
    def chosen(model: str, **options: Any) -> str:
        return LiteLLMJudge(model, api_key=KEY, **options).transport

    assert chosen("openai/gpt-4o-mini") == "openai_http"
    assert chosen("gpt-4o-mini") == "openai_http"
    assert chosen("openai/local", api_base="http://127.0.0.1:1/v1", temperature=0) == "openai_http"
    assert chosen("anthropic/claude-sonnet-4-5") == "litellm"
    assert chosen("azure/my-deployment", api_version="2024-10-21") == "litellm"
    assert chosen("openai/gpt-4o-mini", drop_params=True) == "litellm"  # litellm's own option
    assert chosen("openai/o3-mini", max_tokens=100) == "litellm"  # litellm translates it
    assert chosen("openai/o3-mini") == "openai_http"
    assert chosen("openai/gpt-4o-mini", transport="litellm") == "litellm"


def test_asking_for_the_fast_path_where_it_cannot_serve_is_an_error() -> None:
    with pytest.raises(ValueError, match="drop_params need litellm"):
        LiteLLMJudge("openai/gpt-4o-mini", api_key=KEY, transport="openai_http", drop_params=True)
    with pytest.raises(ValueError, match="not 'openai'"):
        LiteLLMJudge("anthropic/claude-sonnet-4-5", transport="openai_http")
    with pytest.raises(ValueError, match="transport must be"):
        LiteLLMJudge("openai/gpt-4o-mini", transport="grpc")  # type: ignore[arg-type]


# --- the same reply on both paths -------------------------------------------------------------

REPLIES = [
    (
        "rich",
        Reply(
            '{"score": 0.5}',
            prompt_tokens=1200,
            completion_tokens=40,
            cached_tokens=1000,
            reasoning_tokens=16,
            cache_creation_tokens=8,
            cost=0.003,
            response_id="chatcmpl-same",
            model="gpt-4o-mini-2024-07-18",
        ),
        False,
    ),
    (
        "streamed",
        Reply('{"score": 0.5}', chunk_size=3, cached_tokens=2, cost=0.25, response_id="c-1"),
        True,
    ),
    ("no usage", Reply('{"score": 1}', include_usage=False, response_id="c-2"), False),
    ("truncated", Reply('{"sco', finish_reason="length", response_id="c-3"), False),
    ("plain text", Reply("plain words", response_id="c-4"), False),
]


@pytest.mark.parametrize(("reply", "stream"), [r[1:] for r in REPLIES], ids=[r[0] for r in REPLIES])
async def test_both_paths_give_the_same_reply_and_send_the_same_body(
    server: LoopbackJudgeServer, reply: Reply, stream: bool
) -> None:
    server.script(reply)
    replies, bodies = [], []
    for transport in ("openai_http", "litellm"):
        judge = LiteLLMJudge(
            "openai/gpt-4o-mini",
            api_base=server.base_url,
            api_key=KEY,
            transport=transport,
            stream=stream,
            temperature=0,
            seed=7,
        )
        got = await judge.complete(request())
        assert got.metadata.pop("transport") == transport
        replies.append(got)
        bodies.append(server.requests[-1].body)
    fast, slow = replies
    if stream:
        # litellm adds zero reasoning tokens of its own to streamed usage; the provider sent none
        slow_usage = slow.usage.model_copy(update={"reasoning_tokens": None})
        assert fast.usage == slow_usage
        fast = fast.__class__(**{**_fields(fast), "usage": slow.usage})
    assert fast == slow
    if reply.include_usage:
        assert fast.estimated_cost_usd is not None and fast.estimated_cost_usd > 0
    fast_body, slow_body = bodies
    assert fast_body == slow_body  # same model name, messages, response format and options


def _fields(reply: Any) -> dict[str, Any]:
    return {name: getattr(reply, name) for name in reply.__dataclass_fields__}


async def test_the_fast_path_keeps_one_connection_alive_across_calls(
    server: LoopbackJudgeServer,
) -> None:
    server.script('{"score": 1}')
    judge = LiteLLMJudge("openai/x", api_base=server.base_url, api_key=KEY)
    for _ in range(5):
        await judge.complete(request())
    assert server.request_count == 5
    assert server.connection_count == 1


def test_sessions_are_closed_with_their_event_loop(tmp_path: Path) -> None:
    # asyncio.run twice: each loop gets its own pooled session, closed when that loop ends.
    script = textwrap.dedent(
        """
        import asyncio, gc, warnings
        warnings.simplefilter("always")
        from scorewatch.judge import JudgeRequest, LiteLLMJudge
        from scorewatch.testing import LoopbackJudgeServer

        with LoopbackJudgeServer('{"score": 1}') as server:
            judge = LiteLLMJudge("openai/x", api_base=server.base_url, api_key="k")
            ask = JudgeRequest(prompt="p", instructions="i", step="analyze")
            for _ in range(2):
                asyncio.run(judge.complete(ask))
            gc.collect()
            print("CONNECTIONS", server.connection_count)
        """
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert done.returncode == 0, done.stderr
    assert "CONNECTIONS 2" in done.stdout
    assert "Unclosed" not in done.stderr, done.stderr


# --- prices -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model", ["openai/gpt-4o-mini", "openai/o3-mini", "anthropic/claude-sonnet-4-5", "gpt-4o"]
)
def test_the_cached_price_estimate_equals_litellms_calculator(model: str) -> None:
    litellm = import_litellm()
    from litellm.types.utils import Usage

    facts = model_facts(litellm, model)
    assert model_facts(litellm, model) is facts  # looked up once, then kept
    for usage in (
        JudgeUsage(input_tokens=1000, output_tokens=100, total_tokens=1100),
        JudgeUsage(
            input_tokens=1000, output_tokens=100, cached_input_tokens=400, reasoning_tokens=30
        ),
        JudgeUsage(
            input_tokens=1000,
            output_tokens=100,
            cached_input_tokens=100,
            cache_creation_input_tokens=200,
        ),
    ):
        priced = Usage(
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            total_tokens=(usage.input_tokens or 0) + (usage.output_tokens or 0),
            prompt_tokens_details=(
                {"cached_tokens": usage.cached_input_tokens}
                if usage.cached_input_tokens is not None
                else None
            ),
            completion_tokens_details=(
                {"reasoning_tokens": usage.reasoning_tokens}
                if usage.reasoning_tokens is not None
                else None
            ),
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
        )
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model,
            prompt_tokens=usage.input_tokens or 0,
            completion_tokens=usage.output_tokens or 0,
            usage_object=priced,
        )
        assert estimate_cost(facts, usage) == pytest.approx(prompt_cost + completion_cost)


def test_litellm_uses_its_bundled_price_table_unless_told_otherwise() -> None:
    code = (
        "import os\n"
        "from scorewatch.judge.prices import offline_by_default\n"
        "offline_by_default()\n"
        "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    for preset, expected in ((None, "True"), ("False", "False")):
        env = dict(environment)
        if preset is not None:
            env["LITELLM_LOCAL_MODEL_COST_MAP"] = preset
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected


# --- API keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["openai_http", "litellm"])
async def test_a_missing_key_is_one_clear_line_and_never_retried(
    server: LoopbackJudgeServer,
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.WARNING, logger="scorewatch.judge")
    model = f"openai/keyless-{transport}"  # a new model: the construction warning is once each
    judge = sw.JudgeConfig(
        model=model,
        instructions="Judge.",
        model_options={"api_base": server.base_url, "transport": transport},
    )
    line = f"judge model {model!r} has no API key: set OPENAI_API_KEY (or pass api_key)"
    assert [r.getMessage() for r in caplog.records] == []  # nothing until a judge is built
    scorer = (
        sw.create_scorer(id="keyless", description="d", judge=judge)
        .analyze(sw.PromptStep("a", lambda ctx: "p", output_schema=SCHEMA))
        .generate_score(lambda ctx: 1.0)
    )
    assert line in [r.getMessage() for r in caplog.records]  # at construction, once
    with pytest.raises(sw.ScorerRunError) as caught:
        await scorer.run(input="q", output="a")
    cause = caught.value.__cause__
    assert isinstance(cause, JudgeProviderError)
    assert (cause.code, cause.retryable, cause.message) == ("MISSING_API_KEY", False, line)
    assert caught.value.result is not None and caught.value.result.judge is not None
    record = caught.value.result.judge["analyze"].executions[0]
    assert (record.attempt_count, record.model_call_count) == (1, 0)
    assert record.error is not None and record.error.code == "MISSING_API_KEY"
    assert server.request_count == 0  # nothing was sent


async def test_another_providers_missing_key_names_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    judge = LiteLLMJudge("anthropic/claude-sonnet-4-5", api_base="http://127.0.0.1:9/")
    assert judge.transport == "litellm"
    with pytest.raises(JudgeProviderError) as caught:
        await judge.complete(request())
    assert caught.value.code == "MISSING_API_KEY"
    assert caught.value.retryable is False
    assert "ANTHROPIC_API_KEY" in caught.value.message
    assert "claude-sonnet-4-5" in caught.value.message


@pytest.mark.parametrize("transport", ["openai_http", "litellm"])
@pytest.mark.parametrize("status", [401, 403])
async def test_a_rejected_key_is_not_retried_and_says_where_the_key_came_from(
    server: LoopbackJudgeServer, transport: str, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(HttpError(status))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    from_env = LiteLLMJudge("openai/x", api_base=server.base_url, transport=transport)
    explicit = LiteLLMJudge("openai/x", api_base=server.base_url, api_key=KEY, transport=transport)
    for judge, where in ((from_env, "OPENAI_API_KEY"), (explicit, "the api_key option")):
        with pytest.raises(JudgeProviderError) as caught:
            await judge.complete(request())
        assert caught.value.retryable is False
        assert caught.value.message.endswith(f"(HTTP {status}); check {where}")
        assert KEY not in f"{caught.value} {caught.value!r} {caught.value.to_dict()}"


def test_serve_check_names_the_missing_key_and_the_model(tmp_path: Path) -> None:
    body = '[judge]\nmodel = "openai/gpt-4o-mini"\n[[scorers]]\nid = "f"\nkind = "faithfulness"\n'
    path = write_config(tmp_path, body)
    code, stderr = run_serve(path, "--check", env={"OPENAI_API_KEY": ""})
    assert code == 2
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines == [
        f"scorewatch serve: {path}: scorer 'f': judge model 'openai/gpt-4o-mini' "
        "has no API key: set OPENAI_API_KEY (or pass api_key)"
    ]
    code, stderr = run_serve(path, "--check", env={"OPENAI_API_KEY": KEY})
    assert code == 0, stderr


async def test_the_fast_path_honours_the_proxy_environment_like_the_openai_sdk(
    server: LoopbackJudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script('{"score": 1}')
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    proxied = LiteLLMJudge("openai/x", api_base=server.base_url, api_key=KEY, max_retries=0)
    with pytest.raises(JudgeProviderError) as caught:
        await proxied.complete(request())
    assert caught.value.code == "CONNECTION_ERROR"
    assert server.request_count == 0  # it went to the (absent) proxy, not to the server
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    bypassed = LiteLLMJudge("openai/x", api_base=server.base_url, api_key=KEY)
    assert (await bypassed.complete(request())).text == '{"score": 1}'
    assert server.request_count == 1
