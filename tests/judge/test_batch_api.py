"""The Batch API path from Python: the stand-in server's documented lifecycle as the client sees
it, a batching run's judge records (transport, usage, batch price), a batch that fails
validation, and a judge the Batch API cannot serve."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import scorewatch as sw
from scorewatch.evals import RunOutcome, run_experiment
from scorewatch.evals.batched import BatchSettings, score_items_batched
from scorewatch.judge import LiteLLMJudge
from scorewatch.judge.prices import ModelFacts, batch_facts
from scorewatch.testing import ScriptedJudge
from scorewatch.testing.batch_server import STAND_IN_REASON, BatchStandInServer, schema_answer
from scorewatch.testing.judge_server import Behaviour, HttpError, Reply

pytestmark = pytest.mark.e2e

KEY = "sk-batch-sentinel-7731"
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}


def _line(custom_id: str, text: str) -> dict[str, Any]:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def _file(*lines: dict[str, Any]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


async def _until_done(client: Any, batch_id: str) -> tuple[dict[str, Any], list[str]]:
    statuses: list[str] = []
    while True:
        batch = await client.retrieve(batch_id)
        if not statuses or statuses[-1] != batch["status"]:
            statuses.append(batch["status"])
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return batch, statuses
        await asyncio.sleep(0.01)


async def test_the_stand_in_moves_a_batch_through_the_documented_statuses() -> None:
    def script(body: dict[str, Any]) -> Behaviour:
        text = body["messages"][0]["content"]
        return HttpError(429) if text == "refuse" else Reply(f"echo {text}", prompt_tokens=7)

    with BatchStandInServer(script, line_s=0.02, validating_s=0.05) as server:
        judge = LiteLLMJudge("openai/gpt-4o-mini", api_base=server.base_url, api_key=KEY)
        client = judge.batch_client()
        file_id = await client.upload(_file(_line("a", "one"), _line("b", "refuse")), "in.jsonl")
        created = await client.create(file_id, {"purpose": "test"})
        assert created["status"] == "validating"
        assert (await client.find_by_input(file_id) or {}).get("id") == created["id"]
        batch, statuses = await _until_done(client, created["id"])
        output = await client.content(batch["output_file_id"])
        errors = await client.content(batch["error_file_id"])
        assert "authorization" in server.requests[0].header_names
    assert statuses[0] == "validating" and statuses[-1] == "completed"
    assert "in_progress" in statuses
    assert batch["request_counts"] == {"total": 2, "completed": 1, "failed": 1}
    answered = json.loads(output)
    assert answered["custom_id"] == "a" and answered["response"]["status_code"] == 200
    assert answered["response"]["body"]["choices"][0]["message"]["content"] == "echo one"
    refused = json.loads(errors)
    assert refused["custom_id"] == "b" and refused["response"]["status_code"] == 429


async def test_a_file_with_a_repeated_custom_id_fails_validation_at_its_line() -> None:
    with BatchStandInServer() as server:
        client = LiteLLMJudge(
            "openai/gpt-4o-mini", api_base=server.base_url, api_key=KEY
        ).batch_client()
        file_id = await client.upload(_file(_line("a", "x"), _line("a", "y")), "in.jsonl")
        batch, _ = await _until_done(client, (await client.create(file_id, {}))["id"])
        assert server.line_counts == {}
    assert batch["status"] == "failed"
    assert batch["errors"]["data"][0]["line"] == 2
    assert batch["output_file_id"] is None


def _scorer(judge: sw.JudgeConfig) -> sw.Scorer:
    return (
        sw.create_scorer(id="verdict", description="Judges the answer", judge=judge)
        .analyze(sw.PromptStep("Analyze", lambda ctx: f"Analyze {ctx.run.output}", SCHEMA))
        .generate_score(lambda ctx: 1.0 if ctx.results.analyze_step_result else 0.0)
        .generate_reason(sw.PromptStep("Explain", lambda ctx: f"Why {ctx.score}?"))
    )


async def test_a_batched_run_records_the_batch_transport_usage_and_half_price(
    tmp_path: Path,
) -> None:
    data = [{"input": f"q{i}", "output": f"a{i}"} for i in range(4)]
    state = tmp_path / "state.json"
    reports: list[str] = []
    with BatchStandInServer(schema_answer) as server:
        judge = sw.JudgeConfig(
            model="openai/gpt-4o-mini",
            instructions="Judge.",
            model_options={"api_base": server.base_url, "api_key": KEY},
        )
        outcomes: list[RunOutcome] = []

        async def keep(outcome: RunOutcome) -> None:
            outcomes.append(outcome)

        await score_items_batched(
            lambda: run_experiment(
                data=data, scorers=[_scorer(judge)], concurrency=len(data), on_result=keep
            ),
            BatchSettings(state_path=state, poll_interval=0.05),
            report=reports.append,
        )
        totals = [b["request_counts"]["total"] for b in server.batches.values()]
    assert totals == [4, 4]  # analyze for every item, then every reason
    assert not state.exists()
    assert any("batch round 2: submitted" in line for line in reports)
    assert len(outcomes) == len(data)
    for outcome in outcomes:
        assert outcome.error is None and outcome.result is not None
        assert outcome.result.judge is not None
        analyze = outcome.result.judge["analyze"].executions[0]
        assert analyze.judge_transport == "openai_batch"
        assert analyze.usage.as_dict() == {
            "input_tokens": 10,
            "output_tokens": 20,
            "total_tokens": 30,
        }
        facts = ModelFacts(input=1.5e-07, output=6e-07)  # gpt-4o-mini's direct prices
        direct = 10 * facts.input + 20 * facts.output  # type: ignore[operator]
        assert analyze.estimated_cost_usd == pytest.approx(direct / 2)
        assert KEY not in json.dumps(outcome.result.model_dump(mode="json"), default=str)


def test_a_model_without_batch_prices_is_priced_at_half() -> None:
    facts = ModelFacts(input=2e-06, output=8e-06, cache_read=1e-06)
    batch, source = batch_facts(facts)
    assert (batch.input, batch.output, batch.cache_read) == (1e-06, 4e-06, 5e-07)
    assert source == "price table x 0.5 (Batch API discount)"
    listed, listed_source = batch_facts(
        ModelFacts(input=2e-06, output=8e-06, batch_input=5e-07, batch_output=2e-06)
    )
    assert (listed.input, listed.output, listed_source) == (5e-07, 2e-06, "price table (batches)")


async def test_a_judge_the_batch_api_cannot_serve_fails_each_run_clearly(tmp_path: Path) -> None:
    judge = sw.JudgeConfig(model=ScriptedJudge(['{"verdict": "ok"}']), instructions="Judge.")
    result = await score_items_batched(
        lambda: run_experiment(data=[{"input": "q", "output": "a"}], scorers=[_scorer(judge)]),
        BatchSettings(state_path=tmp_path / "state.json", poll_interval=0.05),
    )
    error = result.items[0].results["verdict"].error
    assert error is not None and "cannot be batched" in str(error)


async def test_the_openai_sdk_drives_the_stand_in_as_it_drives_openai() -> None:
    """The stand-in follows the documented API closely enough for OpenAI's own client (which
    litellm's batch helpers use too): upload, create, retrieve, list, download."""
    import openai

    with BatchStandInServer(schema_answer) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        uploaded = await client.files.create(
            file=("in.jsonl", _file(_line("only", "hello"))), purpose="batch"
        )
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        while batch.status not in ("completed", "failed"):
            await asyncio.sleep(0.02)
            batch = await client.batches.retrieve(batch.id)
        listed = await client.batches.list(limit=10)
        assert batch.output_file_id is not None
        content = await client.files.content(batch.output_file_id)
        await client.close()
    assert uploaded.purpose == "batch" and batch.status == "completed"
    assert batch.request_counts is not None and batch.request_counts.completed == 1
    assert [b.id for b in listed.data] == [batch.id]
    answer = json.loads(content.content)
    assert answer["custom_id"] == "only"
    assert answer["response"]["body"]["choices"][0]["message"]["content"] == STAND_IN_REASON
