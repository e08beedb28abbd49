"""A simulated day of bursty traffic under a judge spend budget (issue #33, `SpendBudget`).

    .venv/bin/python benchmarks/bench_spend_budget.py [-o result.json] [--seeds 5]

Calls arrive as a Poisson process at `--rate` per second, with one hour at 10x that rate; each
call's trace fraction is uniform (as a trace id's hash is). A sampled run finishes `--latency`
seconds later having cost a lognormal amount (mean `--cost` USD), which it settles with the
budget. The clock is simulated, so a whole day takes seconds. Reported per seed: the spend
against the budget, the largest overrun at any moment and the cost then in flight (the bound the
issue sets), the calls scored and skipped, and the effective sampling rate in and out of the
burst.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
from typing import Any

import _common

from scorewatch.live.spend_budget import DAY_S, SpendBudget

BURST_START, BURST_END = 14 * 3600.0, 15 * 3600.0


def simulate(seed: int, rate: float, cost: float, latency: float, budget_usd: float) -> Any:
    rng = random.Random(seed)
    now = 0.0
    budget = SpendBudget(budget_usd, clock=lambda: now)
    sigma = 0.5
    mu = math.log(cost) - sigma**2 / 2  # lognormal with mean `cost`
    in_flight: list[tuple[float, float, float]] = []  # (finish time, reserved, actual cost)
    flying_cost = 0.0
    worst_over, flying_at_worst = 0.0, 0.0
    scored = offered = 0
    burst = {"offered": 0, "scored": 0}
    unconstrained = 0.0
    t = 0.0
    while True:
        in_burst = BURST_START <= t < BURST_END
        t += rng.expovariate(rate * (10 if in_burst else 1))
        if t >= DAY_S:
            break
        while in_flight and in_flight[0][0] <= t:
            finish, reserved, actual = heapq.heappop(in_flight)
            now = finish
            flying_cost -= actual
            budget.settle(reserved, actual)
            over = budget.spent - budget.usd_per_period
            if over > worst_over:
                worst_over, flying_at_worst = over, flying_cost + actual
        now = t
        offered += 1
        actual = rng.lognormvariate(mu, sigma)
        unconstrained += actual
        decision, reserved = budget.admit(rng.random(), base_rate=1.0)
        if in_burst:
            burst["offered"] += 1
        if decision == "sampled":
            scored += 1
            if in_burst:
                burst["scored"] += 1
            flying_cost += actual
            heapq.heappush(in_flight, (t + latency, reserved, actual))
    while in_flight:  # the day's last runs land (before midnight: the same period)
        finish, reserved, actual = heapq.heappop(in_flight)
        now = min(finish, DAY_S - 1e-6)
        flying_cost -= actual
        budget.settle(reserved, actual)
        over = budget.spent - budget.usd_per_period
        if over > worst_over:
            worst_over, flying_at_worst = over, flying_cost + actual
    outside = offered - burst["offered"]
    return {
        "seed": seed,
        "offered": offered,
        "scored": scored,
        "skipped_budget": budget.skipped_budget,
        "unconstrained_spend_usd": round(unconstrained, 4),
        "budget_usd": budget_usd,
        "spent_usd": round(budget.spent, 4),
        "spent_share_of_budget": round(budget.spent / budget_usd, 5),
        "worst_overrun_usd": round(worst_over, 6),
        "cost_in_flight_then_usd": round(flying_at_worst, 6),
        "rate_in_burst": round(burst["scored"] / max(burst["offered"], 1), 4),
        "rate_outside_burst": round((scored - burst["scored"]) / max(outside, 1), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rate", type=float, default=1.0, help="mean calls per second")
    parser.add_argument("--cost", type=float, default=0.002, help="mean USD per scored run")
    parser.add_argument("--latency", type=float, default=3.0, help="seconds a run is in flight")
    parser.add_argument("--budget", type=float, default=60.0, help="USD per day")
    args = parser.parse_args()
    runs = [
        simulate(seed, args.rate, args.cost, args.latency, args.budget)
        for seed in range(args.seeds)
    ]
    shares = [run["spent_share_of_budget"] for run in runs]
    _common.emit(
        {
            "runs": runs,
            "spent_share_of_budget": {"min": min(shares), "max": max(shares)},
            "within_1_percent": all(0.99 <= share <= 1.01 for share in shares),
            "overrun_within_in_flight": all(
                run["worst_overrun_usd"] <= run["cost_in_flight_then_usd"] for run in runs
            ),
        },
        args.output,
    )


if __name__ == "__main__":
    main()
