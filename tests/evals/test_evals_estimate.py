"""Cost estimates before spending: judge calls, tokens and cost, with no judge called."""

from __future__ import annotations

from typing import Any

import pytest

import scorewatch as sw
from scorewatch.evals.estimate import TEXT_ANSWER_TOKENS, estimate_scoring, smallest_instance
from scorewatch.judge import LiteLLMJudge
from scorewatch.judge.prices import import_litellm
from scorewatch.scorers import create_answer_relevancy_scorer
from scorewatch.testing import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.unit

DATA = [
    {"input": "What is the refund window?", "output": "Thirty days from delivery."},
    {"input": "Do you ship abroad?", "output": "Yes, to the EU and the UK."},
]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def two_step(model: Any) -> sw.Scorer:
    return (
        sw.create_scorer(
            id="two-step",
            description="d",
            judge=sw.JudgeConfig(model=model, instructions="You are a strict judge."),
        )
        .analyze(
            sw.PromptStep("Check", lambda ctx: f"Check: {ctx.run.output}", output_schema=SCHEMA)
        )
        .generate_score(lambda ctx: 1.0 if ctx.results.analyze_step_result["ok"] else 0.0)
        .generate_reason(sw.PromptStep("Explain", lambda ctx: f"Explain {ctx.score}"))
    )


async def test_the_estimate_calls_no_judge_and_counts_with_the_tokenizer() -> None:
    with LoopbackJudgeServer(lambda body: Reply('{"ok": true}')) as server:
        judge = LiteLLMJudge("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test")
        estimate = await estimate_scoring(DATA, [two_step(judge)], repeat=3)
        assert server.requests == []
    found = estimate.scorers["two-step"]
    assert found.judge_calls == 2 * len(DATA) * 3
    litellm = import_litellm()
    analyze = litellm.token_counter(
        model="openai/gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are a strict judge.\n\n" + _instruction()},
            {"role": "user", "content": f"Check: {DATA[0]['output']}"},
        ],
    )
    assert found.prompt_tokens > 3 * len(DATA) * analyze  # analyze prompts plus reason prompts
    assert found.completion_sources == {"schema", "default"}
    assert found.completion_tokens >= 3 * len(DATA) * TEXT_ANSWER_TOKENS
    assert found.cost_usd > 0 and found.unpriced_calls == 0
    assert "litellm" in estimate.price_source and "price table" in estimate.price_source


def _instruction() -> str:
    from scorewatch.judge.structured import json_instruction

    return json_instruction(SCHEMA)


async def test_history_replaces_the_schema_guess() -> None:
    with LoopbackJudgeServer(lambda body: Reply("{}")) as server:
        judge = LiteLLMJudge("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test")
        history = {"two-step": {"analyze": 40.0, "generate_reason": 70.0}}
        estimate = await estimate_scoring(DATA, [two_step(judge)], history=history)
    found = estimate.scorers["two-step"]
    assert found.completion_sources == {"history"}
    assert found.completion_tokens == pytest.approx(len(DATA) * (40 + 70))


async def test_a_prebuilt_scorer_is_followed_through_its_steps() -> None:
    with LoopbackJudgeServer(lambda body: Reply("{}")) as server:
        judge = LiteLLMJudge("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test")
        estimate = await estimate_scoring(DATA, [create_answer_relevancy_scorer(judge)])
        assert server.requests == []
    (found,) = estimate.scorers.values()
    assert found.judge_calls >= 2 * len(DATA)
    assert found.unfollowed == 0


def test_an_unpriced_model_is_counted_apart() -> None:
    import asyncio

    with LoopbackJudgeServer(lambda body: Reply("{}")) as server:
        judge = LiteLLMJudge("openai/no-such-model", api_base=server.base_url, api_key="sk-test")
        estimate = asyncio.run(estimate_scoring(DATA, [two_step(judge)]))
    found = estimate.scorers["two-step"]
    assert found.unpriced_calls == found.judge_calls == 2 * len(DATA)
    assert found.cost_usd == 0


def test_smallest_instances() -> None:
    assert smallest_instance(SCHEMA) == {"ok": False}
    assert smallest_instance({"type": "array", "items": {"type": "string"}, "minItems": 2}) == [
        "",
        "",
    ]
    schema = {
        "type": "object",
        "properties": {"v": {"$ref": "#/$defs/V"}},
        "required": ["v"],
        "$defs": {"V": {"enum": ["yes", "no"]}},
    }
    assert smallest_instance(schema) == {"v": "yes"}
    assert smallest_instance({"type": "number", "minimum": 0.5}) == 0.5


async def test_an_estimate_reaches_no_telemetry() -> None:
    from core_support import observing

    with LoopbackJudgeServer(lambda body: Reply("{}")) as server, observing() as observer:
        judge = LiteLLMJudge("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test")
        estimate = await estimate_scoring(DATA, [two_step(judge)])
    assert estimate.judge_calls == 2 * len(DATA)
    assert observer.starts == []
