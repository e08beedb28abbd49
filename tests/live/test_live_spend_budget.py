"""`SpendBudget`: the sampling probability a daily judge budget allows."""

from __future__ import annotations

import random

import pytest

from scorewatch.live.spend_budget import DAY_S, SpendBudget

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
