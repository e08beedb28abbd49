"""`SpendBudget`: the sampling probability a daily judge budget allows; `Budgets`: the budgets
live sampling asks; the queue entry that carries a reservation to the worker."""

from __future__ import annotations

import random

import pytest

import scorewatch as sw
from live_support import constant_scorer
from scorewatch.core.call import AgentCall
from scorewatch.live.budgets import Budgets
from scorewatch.live.spend_budget import DAY_S, Reservation, SpendBudget
from scorewatch.server.queue.stream import decode_entry, encode_entry

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_without_a_measured_cost_the_configured_rate_holds() -> None:
    budget = SpendBudget(10.0, clock=Clock())
    assert budget.effective_rate(0.5) == 0.5
    assert budget.admit(0.4, base_rate=0.5)[0] == "sampled"
    assert budget.admit(0.6, base_rate=0.5) == ("not_sampled", None)
    assert budget.skipped_budget == 0


def test_the_rate_falls_so_expected_spend_fits_and_skips_are_counted() -> None:
    clock = Clock()
    budget = SpendBudget(1.0, clock=clock)  # $1 a day
    for _ in range(100):  # 1 call a second at $0.01 a run would spend $864 a day
        clock.now += 1.0
        decision, reserved = budget.admit(0.0, base_rate=1.0)
        if decision == "sampled":
            budget.settle(reserved, 0.01)
    rate = budget.effective_rate(1.0)
    assert 0 < rate < 0.01
    assert budget.admit(0.5, base_rate=1.0) == ("skipped_budget", None)
    assert budget.skipped_budget >= 1


def test_one_trace_is_in_or_out_for_every_scorer_of_the_same_rate() -> None:
    clock, rng = Clock(), random.Random(5)
    budget = SpendBudget(1.0, clock=clock)
    budget.settle(None, 0.01)
    outcomes = set()
    for call in range(2_000):
        clock.now = float(call)
        fraction = rng.random()
        # Three scorers of the same rate on one call, one clock reading for the call.
        decisions = {budget.admit(fraction, base_rate=0.8, now=clock.now)[0] for _ in range(3)}
        assert len(decisions) == 1
        outcomes |= decisions
    assert outcomes == {"sampled", "skipped_budget", "not_sampled"}


def test_a_spent_budget_stops_sampling_until_the_next_period() -> None:
    clock = Clock(100.0)
    budget = SpendBudget(0.05, clock=clock)
    budget.settle(None, 0.05)  # the period's budget, spent
    assert budget.remaining_usd == 0
    assert budget.effective_rate(1.0) == 0.0
    assert budget.admit(0.0, base_rate=1.0) == ("skipped_budget", None)
    clock.now = DAY_S + 1  # the next UTC day
    decision, reserved = budget.admit(0.0, base_rate=1.0)
    assert decision == "sampled" and reserved is not None
    assert reserved.amount == pytest.approx(0.05)
    assert budget.spent == 0.0


def test_spend_never_exceeds_the_budget_when_costs_are_as_measured() -> None:
    clock, rng = Clock(), random.Random(3)
    budget = SpendBudget(2.0, clock=clock)
    while (next_call := clock.now + rng.expovariate(0.5)) < DAY_S:
        clock.now = next_call
        decision, reserved = budget.admit(rng.random(), base_rate=1.0)
        if decision == "sampled":
            budget.settle(reserved, 0.004)
        assert budget.spent <= budget.usd_per_period + 1e-9
    assert budget.spent == pytest.approx(2.0, rel=0.01)


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="usd_per_day"):
        SpendBudget(0.0)


# -- Budgets: the shared budget and the scorers' own, as live sampling asks them --------------


def judged(scorer_id: str = "judged") -> sw.Scorer:
    return sw.create_scorer(
        id=scorer_id,
        description="judged",
        judge=sw.JudgeConfig(model="openai/judge", instructions="Rate it."),
    ).generate_score(sw.PromptStep("rate", lambda ctx: "Rate it."))


def test_a_scorer_under_both_budgets_gives_back_what_one_took_when_the_other_skips() -> None:
    clock = Clock(10.0)
    budgets = Budgets.build(1.0, {"judged": 0.02}, clock=clock)
    assert budgets is not None and budgets.shared is not None
    own = budgets.per_scorer["judged"]
    own.settle(None, 0.02)  # the scorer's own budget is spent; the shared one is not
    budgets.shared.settle(None, 0.01)  # a cost is known: the shared budget reserves it
    assert budgets.admit("judged", 0.0, None, clock.now) == ("skipped_budget", None)
    assert budgets.shared.reserved == 0.0  # what the shared budget reserved is given back
    assert budgets.admit("other", 0.0, None, clock.now)[0] == "sampled"  # only the shared one


def test_a_hold_is_settled_once_and_a_model_free_scorer_is_never_budgeted() -> None:
    clock = Clock(10.0)
    budgets = Budgets.build(1.0, clock=clock)
    assert budgets is not None and budgets.shared is not None
    budgets.shared.settle(None, 0.1)
    decision, hold = budgets.admit("judged", 0.0, None, clock.now)
    assert decision == "sampled" and hold is not None
    assert budgets.shared.reserved == pytest.approx(0.1)
    budgets.settle_cost(hold, 0.2)
    budgets.release(hold)  # e.g. shutdown after the run settled: nothing more
    budgets.settle_cost(hold, 0.2)
    assert budgets.shared.reserved == 0.0
    assert budgets.shared.spent == pytest.approx(0.3)
    assert budgets.governs(judged()) and not budgets.governs(constant_scorer())


def stored(fields: list[str]) -> dict[bytes, bytes]:
    """An entry's fields as Redis hands them back."""
    return {k.encode(): v.encode() for k, v in zip(fields[::2], fields[1::2], strict=True)}


def test_a_queue_entry_carries_what_serve_reserved_to_the_worker() -> None:
    call = AgentCall("q", "a", "agent", "0" * 32)
    held = (Reservation("all", 20_000, 0.002), Reservation("scorer:judged", 20_000, 0.0))
    fields = encode_entry("judged", "run-1", call, {}, held)
    as_stored = stored(fields)
    assert decode_entry(as_stored).reservations == held
    without = encode_entry("judged", "run-1", call, {})
    assert "budget" not in without[::2]
    assert decode_entry(stored(without)).reservations == ()
    as_stored[b"budget"] = b'[["all", "x"]]'
    with pytest.raises(ValueError, match=r"malformed entry \(budget\)"):
        decode_entry(as_stored)
