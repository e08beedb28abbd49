"""A simulated day of bursty traffic under a judge spend budget (issue #33, live/budgets.py).

    .venv/bin/python benchmarks/bench_spend_budget.py [-o result.json] [--seeds 5]
        [--ledger memory|redis] [--processes N]

Calls arrive as a Poisson process at `--rate` per second, with one hour at 10x that rate; each
call's trace fraction is uniform (as a trace id's hash is). Each call is decided by
`Budgets.admit`, the code the live engine and serve's admission run, by one of `--processes`
deciders chosen at random (each its own `Budgets`, as serve replicas are). A sampled run finishes
`--latency` seconds later having cost a lognormal amount (mean `--cost` USD), which it settles
(`Budgets.settle_cost`, what the engine and the queue worker call with the judge records' cost).
`--ledger redis` keeps the budget in the real Redis of tests/service_databases.py, shared by the
deciders; `memory` gives each decider its own (use it with one process). The clock is
simulated, so a whole day takes seconds (minutes through Redis). Reported per seed: the spend
against the budget, the largest overrun at any moment and the cost then in flight (the bound the
issue sets), the calls scored and skipped, and the effective sampling rate in and out of the
burst.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
import uuid
from pathlib import Path
from typing import Any

import _common

from scorewatch.live.budgets import Budgets, Hold
from scorewatch.live.spend_budget import DAY_S

BURST_START, BURST_END = 14 * 3600.0, 15 * 3600.0


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _deciders(args: argparse.Namespace, clock: _Clock, prefix: str) -> list[Budgets]:
    url = None
    if args.ledger == "redis":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from service_databases import REDIS_URL

        url = REDIS_URL
    deciders = []
    for _ in range(args.processes):
        built = Budgets.build(args.budget, redis_url=url, prefix=prefix, clock=clock)
        assert built is not None
        deciders.append(built)
    return deciders


def _forget(prefix: str) -> None:
    import redis

    from service_databases import REDIS_URL

    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=prefix + "*"))
    if keys:
        client.delete(*keys)
    client.close()


def simulate(seed: int, args: argparse.Namespace) -> Any:
    rng = random.Random(seed)
    clock = _Clock()
    prefix = f"swbench-{uuid.uuid4().hex[:12]}:budget:"
    deciders = _deciders(args, clock, prefix)
    sigma = 0.5
    mu = math.log(args.cost) - sigma**2 / 2  # lognormal with mean `cost`
    # (finish time, order, decider, hold, actual cost)
    in_flight: list[tuple[float, int, int, Hold, float]] = []
    spent = flying_cost = 0.0
    worst_over, flying_at_worst = 0.0, 0.0
    scored = offered = skipped = order = 0
    burst = {"offered": 0, "scored": 0}
    unconstrained = 0.0

    def land(until: float) -> None:
        nonlocal spent, flying_cost, worst_over, flying_at_worst
        while in_flight and in_flight[0][0] <= until:
            finish, _order, who, hold, actual = heapq.heappop(in_flight)
            clock.now = min(finish, DAY_S - 1e-6)  # the day's last runs land before midnight
            flying_cost -= actual
            deciders[who].settle_cost(hold, actual)
            spent += actual
            over = spent - args.budget
            if over > worst_over:
                worst_over, flying_at_worst = over, flying_cost + actual

    t = 0.0
    try:
        while True:
            in_burst = BURST_START <= t < BURST_END
            t += rng.expovariate(args.rate * (10 if in_burst else 1))
            if t >= DAY_S:
                break
            land(t)
            clock.now = t
            offered += 1
            actual = rng.lognormvariate(mu, sigma)
            unconstrained += actual
            who = rng.randrange(len(deciders))
            decision, hold = deciders[who].admit("judged", rng.random(), 1.0, t)
            burst["offered"] += in_burst
            if decision == "sampled" and hold is not None:
                scored += 1
                burst["scored"] += in_burst
                flying_cost += actual
                order += 1
                heapq.heappush(in_flight, (t + args.latency, order, who, hold, actual))
            else:
                skipped += 1
        land(math.inf)
    finally:
        if args.ledger == "redis":
            _forget(prefix)
    outside = offered - burst["offered"]
    return {
        "seed": seed,
        "offered": offered,
        "scored": scored,
        "skipped_budget": skipped,
        "unconstrained_spend_usd": round(unconstrained, 4),
        "budget_usd": args.budget,
        "spent_usd": round(spent, 4),
        "spent_share_of_budget": round(spent / args.budget, 5),
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
    parser.add_argument("--ledger", choices=("memory", "redis"), default="memory")
    parser.add_argument("--processes", type=int, default=1, help="deciders sharing the ledger")
    args = parser.parse_args()
    if args.ledger == "memory" and args.processes != 1:
        parser.error("--processes needs --ledger redis (an in-process ledger is not shared)")
    runs = [simulate(seed, args) for seed in range(args.seeds)]
    shares = [run["spent_share_of_budget"] for run in runs]
    _common.emit(
        {
            "ledger": args.ledger,
            "processes": args.processes,
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
