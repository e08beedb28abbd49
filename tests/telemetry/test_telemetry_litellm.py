"""Telemetry over the real judge path: LiteLLMJudge, real litellm, the loopback judge server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from scorewatch.judge import LiteLLMJudge, RetryPolicy
from scorewatch.telemetry import names
from scorewatch.testing import HttpError, LoopbackJudgeServer, Reply
from telemetry_helpers import in_memory_telemetry, prompt_scorer, verdicts

pytestmark = pytest.mark.integration

API_KEY = "sk-telemetry-sentinel-7d1c"


@pytest.fixture
def server() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer() as running:
        yield running


@pytest.mark.parametrize("transport", ["openai_http", "litellm"])
async def test_chat_spans_and_metrics_from_real_http_calls(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.push(
        HttpError(429, headers={"Retry-After": "0"}),
        Reply(
            text=verdicts(2),
            prompt_tokens=120,
            completion_tokens=9,
            cached_tokens=64,
            reasoning_tokens=5,
            cost=0.0042,
            response_id="chatcmpl-abc",
            model="loopback-judge-2025",
        ),
        Reply(text="Because.", prompt_tokens=30, completion_tokens=4),
    )
    judge = LiteLLMJudge(
        "openai/loopback-judge",
        api_base=server.base_url,
        api_key=API_KEY,
        retry_policy=RetryPolicy(max_retries=1, base_delay=0.0, jitter=False),
        transport=transport,
    )
    with in_memory_telemetry(capture_content=True) as sink:
        result = await prompt_scorer(judge).run(output="x")
        assert result.score == 0.5
        analyze = sink.span("evaluation.step analyze")
        chats = sorted(
            (
                s
                for s in sink.spans()
                if s.parent is not None and s.parent.span_id == analyze.context.span_id
            ),
            key=lambda s: s.start_time or 0,
        )
        # Named by the model the provider sees (litellm strips its `openai/` routing prefix).
        assert [s.name for s in chats] == ["chat loopback-judge"] * 2
        assert all(s.kind == SpanKind.CLIENT for s in chats)
        limited, answered = chats
        assert limited.status.status_code == StatusCode.ERROR
        assert "error.type" in (limited.attributes or {})
        # which client made each call, failed or not; the provider name is unaffected
        assert {(s.attributes or {})[names.ATTR_JUDGE_TRANSPORT] for s in chats} == {transport}
        attributes = dict(answered.attributes or {})
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "loopback-judge"
        assert attributes["scorewatch.judge.model_route"] == "openai/loopback-judge"
        assert {r.body["model"] for r in server.requests} == {"loopback-judge"}
        assert attributes["gen_ai.response.id"] == "chatcmpl-abc"
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert attributes["gen_ai.usage.input_tokens"] == 120
        assert attributes["gen_ai.usage.output_tokens"] == 9
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == 64
        assert attributes["gen_ai.usage.reasoning.output_tokens"] == 5
        assert attributes["scorewatch.judge.cost.source"] == "provider"
        assert attributes["scorewatch.judge.cost.amount"] == pytest.approx(0.0042)
        assert attributes["server.address"] == "127.0.0.1"
        assert attributes["server.port"] == server.port

        # Even with content capture on, the API key appears nowhere.
        for span in sink.spans():
            assert API_KEY not in str(dict(span.attributes or {}))
            assert all(API_KEY not in str(dict(e.attributes or {})) for e in span.events)

        record = result.judge["analyze"].executions[0]  # type: ignore[index]
        assert record.attempt_count == 2
        inputs = sum(
            p.sum or 0
            for p in sink.points(names.METRIC_TOKEN_USAGE)
            if p.attributes["gen_ai.token.type"] == "input"
        )
        recorded = sum(
            e.usage.input_tokens or 0
            for r in (result.judge or {}).values()
            for e in r.executions
            if e.usage is not None
        )
        assert inputs == recorded == 150
        attempts = sink.point(names.METRIC_JUDGE_ATTEMPTS, scorewatch__step="analyze")
        assert attempts.value == 2
        # Metrics name the judge model as the provider does, so they line up with the
        # application's own GenAI metrics of the same model.
        assert attempts.attributes["gen_ai.request.model"] == "loopback-judge"
        assert {
            p.attributes["gen_ai.request.model"] for p in sink.points(names.METRIC_TOKEN_USAGE)
        } == {"loopback-judge"}
