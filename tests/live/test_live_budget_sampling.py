"""Spend budgets steer live sampling: `LiveScoring` scoring through a real litellm judge on the
loopback server, whose replies carry a cost, stays within its budget, counts what it skips as
`skipped_budget`, and two scorers' engines sharing a Redis ledger spend one budget together."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from live_support import Collected, constant_scorer, judged_scorer
from prometheus_support import free_port
from scale_support import REDIS_URL, require_redis, unique_prefix
from scorewatch.core.events import Observers
from scorewatch.judge.litellm_judge import LiteLLMJudge
from scorewatch.live import LiveScorerEntry, LiveScoring, Sampling
from scorewatch.live.budgets import Budgets, record_cost_usd
from scorewatch.live.events import BudgetReadings
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply
from service_databases import redis_url

pytestmark = pytest.mark.integration

COST = 0.01  # USD the judge's every reply says it cost


@pytest.fixture
def server() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(lambda body: Reply('{"score": 0.9}', cost=COST)) as running:
        yield running


def judge(server: LoopbackJudgeServer) -> LiteLLMJudge:
    return LiteLLMJudge(
        "openai/judge-model", api_base=server.base_url, api_key="sk-test", max_retries=0
    )


def spent(collected: Collected) -> float:
    return sum(record_cost_usd(record) or 0.0 for record in collected.results)


def test_a_budget_bounds_spend_and_counts_what_it_skips(server: LoopbackJudgeServer) -> None:
    collected, bus = Collected(), Observers()
    live = LiveScoring(
        {
            "judged": LiveScorerEntry(judged_scorer(judge(server), "judged")),
            "free": constant_scorer("free"),  # not under a budget: every call
        },
        sinks=[collected.sink()],
        drain_on_exit=False,
        budget_usd_per_day=0.05,
        observers=bus,
    )
    try:
        for index in range(40):
            live.submit(input="q", output=f"a{index}", trace_id=f"{index:032x}")
            assert live.drain_sync(60)
        stats = live.stats()
        judged = [r for r in collected.results if r.scorer_id == "judged"]
        assert all(r.status == "success" for r in judged)
        # The first run's cost was unknown when it was admitted; every later one reserved it.
        assert 1 <= len(judged) <= 5
        assert spent(collected) <= 0.05 + 1e-9
        assert stats["skipped_budget"] == 40 - len(judged)
        assert stats["sampled"] == 40 + len(judged)  # the free scorer took every call
        (reading,) = BudgetReadings.latest(bus)
        assert reading.scorer_id == "judged" and reading.budget == "all"
        assert reading.remaining_usd == pytest.approx(0.05 - len(judged) * COST, abs=1e-9)
        assert reading.effective_rate < 0.01  # paced over the rest of the day
    finally:
        live.close(5)


def test_a_scorer_entry_has_its_own_budget(server: LoopbackJudgeServer) -> None:
    collected = Collected()
    entry = LiveScorerEntry(
        judged_scorer(judge(server), "judged"),
        sampling=Sampling.ratio(1.0),
        budget_usd_per_day=0.02,
    )
    live = LiveScoring({"judged": entry}, sinks=[collected.sink()], drain_on_exit=False)
    try:
        for index in range(10):
            live.submit(input="q", output="a", trace_id=f"{index:032x}")
            assert live.drain_sync(60)
        assert spent(collected) <= 0.02 + 1e-9
        assert live.stats()["skipped_budget"] >= 8
    finally:
        live.close(5)


@pytest.mark.parametrize("value", [0, -1.0, math.inf, math.nan, True])
def test_a_budget_is_a_positive_number_named_on_error(value: float) -> None:
    with pytest.raises(ValueError, match="budget_usd_per_day"):
        LiveScorerEntry(constant_scorer(), budget_usd_per_day=value)
    with pytest.raises(ValueError, match="budget_usd_per_day"):
        LiveScoring({"c": constant_scorer()}, budget_usd_per_day=value, drain_on_exit=False)


@pytest.fixture
def prefix() -> Iterator[str]:
    require_redis()
    prefix = unique_prefix() + ":budget:"
    yield prefix
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=prefix + "*"))
    if keys:
        client.delete(*keys)
    client.close()


def test_two_engines_sharing_redis_spend_one_budget(
    server: LoopbackJudgeServer, prefix: str
) -> None:
    collected = Collected()
    lives = [
        LiveScoring(
            {"judged": judged_scorer(judge(server), "judged")},
            sinks=[collected.sink()],
            drain_on_exit=False,
            budget_usd_per_day=0.06,
            budget_redis_url=REDIS_URL,
            budget_redis_prefix=prefix,
        )
        for _ in range(2)
    ]
    try:
        for index in range(60):
            live = lives[index % 2]
            live.submit(input="q", output="a", trace_id=f"{index:032x}")
            assert live.drain_sync(60)
        stats = [live.stats() for live in lives]
        assert sum(s["scored"] for s in stats) >= 1
        assert sum(s["scored"] + s["skipped_budget"] for s in stats) == 60
        # Alone, each would have spent up to $0.06; together they stay within it.
        assert spent(collected) <= 0.06 + 1e-9
        client = redis.Redis.from_url(REDIS_URL)
        (key,) = [k for k in client.scan_iter(match=prefix + "all:*") if not k.endswith(b"rates")]
        assert float(client.hget(key, "spent") or 0) == pytest.approx(spent(collected))
        assert 0 < client.ttl(key) <= 2 * 86_400
        client.close()
    finally:
        for live in lives:
            live.close(5)


def test_what_one_process_spent_holds_back_the_other(prefix: str) -> None:
    first, second, alone = (
        Budgets.build(0.03, redis_url=REDIS_URL, prefix=prefix),
        Budgets.build(0.03, redis_url=REDIS_URL, prefix=prefix),
        Budgets.build(0.03),  # in this process only
    )
    assert first is not None and second is not None and alone is not None
    for _ in range(3):  # the first process spends the whole budget, a run at a time
        decision, hold = first.admit("judged", 0.0, None, time.time())
        assert decision == "sampled"
        first.settle_cost(hold, 0.01)
    assert second.admit("judged", 0.0, None, time.time()) == ("skipped_budget", None)
    assert alone.admit("judged", 0.0, None, time.time())[0] == "sampled"


def test_concurrent_deciders_stay_within_the_budget_and_calls_in_flight(prefix: str) -> None:
    deciders = [Budgets.build(0.05, redis_url=REDIS_URL, prefix=prefix) for _ in range(4)]
    spent, lock = [0.0], threading.Lock()

    def decide(budgets: Budgets | None) -> None:
        assert budgets is not None
        for _ in range(50):
            decision, hold = budgets.admit("judged", 0.0, None, time.time())
            if decision == "sampled":
                budgets.settle_cost(hold, 0.01)
                with lock:
                    spent[0] += 0.01

    threads = [threading.Thread(target=decide, args=(budgets,)) for budgets in deciders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Each decider's first run may be admitted before any cost is known (it reserves
    # nothing): at most those four runs in flight pass the budget.
    assert 0.05 - 1e-9 <= spent[0] <= 0.05 + 4 * 0.01 + 1e-9


def test_a_redis_that_does_not_answer_holds_calls_back() -> None:
    # A port where nothing listens: the budget fails closed (it exists to bound spend).
    budgets = Budgets.build(1.0, redis_url=redis_url(port=free_port()))
    assert budgets is not None
    assert budgets.admit("judged", 0.0, None, time.time()) == ("skipped_budget", None)
