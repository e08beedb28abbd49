"""`scorewatch serve` with a spend budget: a real serve process scoring through a loopback judge
whose replies carry a cost stops sampling within `[budget] usd_per_day`, answers the calls it
held back as `skipped_budget`, and reports the budget at /metrics; and serve's Redis intake and
a queue worker in this process settle one budget kept in the real Redis."""

from __future__ import annotations

import asyncio
import math
import socket
import tomllib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from live_support import judged_scorer
from scale_support import REDIS_URL, require_redis, unique_prefix
from scorewatch.core.call import AgentCall
from scorewatch.judge.litellm_judge import LiteLLMJudge
from scorewatch.live import CallbackSink, LiveScorerEntry
from scorewatch.live.budgets import Budgets, record_cost_usd
from scorewatch.server.config.budget_settings import build_budgets
from scorewatch.server.config.file import ConfigError, ServeConfig
from scorewatch.server.intake.admission import plan_items_off_loop
from scorewatch.server.intake.interface import ScoreItem
from scorewatch.server.intake.redis_queue import RedisIntake
from scorewatch.server.queue.stream import StreamNames, connect
from scorewatch.server.queue.worker import StreamWorker
from scorewatch.sinks.record import ScoreRecord
from scorewatch.testing import LoopbackJudgeServer, Reply
from serve_support import JUDGED_AND_LENGTH_SCORERS, ServeProcess, serving_with_judge

pytestmark = pytest.mark.e2e

COST = 0.01

CONFIG = (
    """\
{judge}
[budget]
usd_per_day = 0.05
"""
    + JUDGED_AND_LENGTH_SCORERS
    + """
[sinks]
sqlite = "scores.db"
"""
)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServeProcess, LoopbackJudgeServer]]:
    with serving_with_judge(tmp_path, CONFIG, Reply('{"score": 0.8}', cost=COST)) as serving:
        yield serving


def _metric(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} {labels} in /metrics")


def test_serve_stops_sampling_within_the_budget(
    served: tuple[ServeProcess, LoopbackJudgeServer],
) -> None:
    process, judge = served
    skipped = 0
    with httpx.Client(base_url=process.url, timeout=30) as client:
        for index in range(30):
            call = {"input": "q", "output": f"answer {index}", "target": "agent"}
            call["trace_id"] = f"{index + 1:032x}"
            response = client.post("/v1/scores", params={"wait": "true"}, json=call)
            assert response.status_code == 200, response.text
            decisions = {s["scorer"]: s["decision"] for s in response.json()["skipped"]}
            assert "length" not in decisions  # a model-free scorer spends nothing
            skipped += decisions.get("judged") == "skipped_budget"
        rows = client.get("/v1/scores", params={"scorer": "judged"}).json()["scores"]
        metrics = client.get("/metrics").text
    spent = sum(
        execution.get("estimatedCostUsd") or 0.0
        for row in rows
        for record in row["judge"].values()
        for execution in record["executions"]
    )
    assert 1 <= judge.request_count <= 5 and len(rows) == judge.request_count
    assert spent == pytest.approx(judge.request_count * COST) and spent <= 0.05 + 1e-9
    assert skipped == 30 - judge.request_count
    decided = _metric(
        metrics, "scorewatch_live_decisions_total", scorewatch_decision="skipped_budget"
    )
    assert decided == skipped
    remaining = _metric(metrics, "scorewatch_budget_remaining_usd", gen_ai_evaluation_name="judged")
    assert remaining == pytest.approx(0.05 - spent, abs=1e-9)
    assert _metric(metrics, "scorewatch_budget_limit_usd", scorewatch_budget="all") == 0.05
    assert _metric(metrics, "scorewatch_budget_sampling_rate", scorewatch_budget="all") < 0.01


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"budget": {"usd_per_day": 0}}, "budget.usd_per_day: Input should be greater than 0"),
        ({"budget": {"usd_per_day": math.inf}}, "budget.usd_per_day: Input should be a finite"),
        ({"budget": {"usd_per_dya": 1.0}}, "budget.usd_per_dya: unknown key"),
        ({"budget": {"url": "redis://u:secret@h/0"}}, "budget.url: [budget] url holds a password"),
        (
            {"scorers": [{"id": "a", "kind": "x", "budget_usd_per_day": -1}]},
            "scorers[0].budget_usd_per_day: Input should be greater than 0",
        ),
    ],
)
def test_budget_settings_are_checked_by_name(document: dict[str, Any], problem: str) -> None:
    data: dict[str, Any] = {"scorers": [{"id": "a", "kind": "x"}], **document}
    with pytest.raises(ConfigError) as raised:
        ServeConfig.from_mapping(data)
    assert any(line.startswith(problem) for line in raised.value.problems), raised.value.problems


# -- the Redis queue: serve reserves, the worker settles -------------------------------------------


@pytest.fixture
async def stream() -> AsyncIterator[tuple[Redis, StreamNames, str]]:
    require_redis()
    prefix = unique_prefix()
    names = StreamNames(f"{prefix}:work", f"{prefix}-workers", f"{prefix}:work:dead")
    client = connect(REDIS_URL)
    yield client, names, prefix
    keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def test_the_queue_worker_settles_what_serve_reserved(
    stream: tuple[Redis, StreamNames, str],
) -> None:
    client, names, prefix = stream
    budget_prefix = f"{prefix}:budget:"
    with LoopbackJudgeServer(lambda body: Reply('{"score": 0.8}', cost=COST)) as server:
        judge = LiteLLMJudge(
            "openai/judge", api_base=server.base_url, api_key="sk-test", max_retries=0
        )
        scorer = judged_scorer(judge, "judged")
        serve_budgets = Budgets.build(0.05, redis_url=REDIS_URL, prefix=budget_prefix)
        worker_budgets = Budgets.build(0.05, redis_url=REDIS_URL, prefix=budget_prefix)
        intake = RedisIntake(
            {"judged": LiveScorerEntry(scorer)},
            client=client,
            names=names,
            max_backlog=1000,
            stats_interval=0.1,
            budgets=serve_budgets,
        )
        stored: list[ScoreRecord] = []
        worker = StreamWorker(
            {"judged": scorer},
            client=connect(REDIS_URL),
            names=names,
            sinks=[CallbackSink(stored.append)],
            block_ms=50,
            budgets=worker_budgets,
        )
        working = asyncio.create_task(worker.run(drain_timeout=10))
        try:
            skipped = 0
            for index in range(20):
                item = ScoreItem(AgentCall("q", f"a{index}", "agent", f"{index + 1:032x}"))
                (admission,) = await intake.admit([item])
                skipped += any(s.decision == "skipped_budget" for s in admission.skipped)
                # The worker scores and settles before the next call (the first run waits for
                # litellm to load, which a busy machine takes seconds to do).
                deadline = asyncio.get_running_loop().time() + 60
                while len(stored) < index + 1 - skipped:
                    if asyncio.get_running_loop().time() > deadline:
                        break
                    await asyncio.sleep(0.01)
                assert len(stored) == index + 1 - skipped
        finally:
            worker.stop()
            await working
            await intake.aclose()
    spent = sum(record_cost_usd(record) or 0.0 for record in stored)
    assert 1 <= len(stored) <= 5 and spent <= 0.05 + 1e-9
    assert skipped == 20 - len(stored)
    ledger = [k async for k in client.scan_iter(match=budget_prefix + "all:*") if b"rates" not in k]
    (key,) = ledger
    assert float(await client.hget(key, "spent") or 0) == pytest.approx(spent)
    assert float(await client.hget(key, "reserved") or 0) == pytest.approx(0.0, abs=1e-12)


def test_the_documented_budget_config_is_valid_and_builds_both_budgets() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    section = page[page.index("## `[budget]`") :]
    block = section[section.index("```toml") + len("```toml") : section.index("```\n\n")]
    config = ServeConfig.from_mapping(tomllib.loads(block))
    budgets = build_budgets(config)
    assert budgets is not None and budgets.shared is not None
    assert budgets.shared.usd_per_day == 20.0
    assert budgets.per_scorer["faithfulness"].usd_per_day == 5.0


async def test_a_silent_redis_budget_never_blocks_the_serving_loop() -> None:
    # A "Redis" that accepts connections and never answers: every ledger round trip waits for
    # its timeout. serve plans a request off its loop when the budget is kept in Redis, so the
    # loop keeps serving meanwhile, and the budget fails closed (the call is skipped).
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    try:
        port = silent.getsockname()[1]
        budgets = Budgets.build(1.0, redis_url=f"redis://127.0.0.1:{port}/0")
        judge = LiteLLMJudge("openai/judge", api_base="http://127.0.0.1:9", api_key="sk-test")
        entries = {"judged": LiveScorerEntry(judged_scorer(judge, "judged"))}
        item = ScoreItem(AgentCall("q", "a", "agent", f"{1:032x}"))
        loop = asyncio.get_running_loop()
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        started = loop.time()
        (plan,) = await plan_items_off_loop(entries, [item], budgets)
        waited = loop.time() - started
        ticker.cancel()
    finally:
        silent.close()
    assert [skip.decision for skip in plan.skipped] == ["skipped_budget"]
    assert waited >= 0.4, waited  # it did wait for the silent Redis
    assert ticks >= 10, (ticks, waited)  # ... and the loop ran other work all along
