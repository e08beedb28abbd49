"""A judge spend budget that steers live sampling (issue #33, part 2; not yet wired in).

`SpendBudget(usd_per_day)` decides, for a call its scorer's sampling rate would score, whether
the budget lets it: the effective sampling probability is the configured rate, lowered so that
the expected spend for the rest of the period (measured arrival rate x measured cost per scored
run x time left) fits the budget left. A call is in when its trace's fraction (the same
`Sampling` fraction that makes sampling deterministic per trace) is below that probability, so
one trace is in or out for every scorer of the same rate. Each admitted run reserves its expected
cost until `settle` reports what it cost; a run whose reservation would overrun the budget is
skipped (`skipped_budget`), so the budget is overrun by at most the runs already in flight
costing more than expected. When the period (a UTC day unless told) rolls over, spending starts
again from zero.

The arrival rate and cost per run are exponentially weighted moving averages (time constant
`rate_window_s`, weight `cost_weight`), so a burst lowers the probability within about a window
and its end raises it again.

>>> budget = SpendBudget(usd_per_day=1.0, clock=lambda: 0.0)
>>> budget.admit(0.5, base_rate=1.0)  # no cost measured yet: the configured rate holds
('sampled', 0.0)
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Final, Literal

__all__ = ["BudgetDecision", "SpendBudget"]

BudgetDecision = Literal["sampled", "not_sampled", "skipped_budget"]

DAY_S: Final = 86_400.0


class SpendBudget:
    """`usd_per_day` of judge spend per period of `period_s` seconds (periods start at multiples
    of `period_s` since the epoch: UTC days by default). Thread-safe."""

    def __init__(
        self,
        usd_per_day: float,
        *,
        period_s: float = DAY_S,
        rate_window_s: float = 300.0,
        cost_weight: float = 0.05,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not (usd_per_day > 0 and math.isfinite(usd_per_day)):
            raise ValueError(f"usd_per_day must be a positive number, got {usd_per_day}")
        self.usd_per_period = usd_per_day * period_s / DAY_S
        self.period_s = period_s
        self.rate_window_s = rate_window_s
        self.cost_weight = cost_weight
        self._clock = clock
        self._lock = threading.Lock()
        self.spent = 0.0
        """Settled spend of the current period."""
        self.reserved = 0.0
        """Expected cost of the runs admitted and not yet settled."""
        self.cost_per_run: float | None = None
        """Measured cost of one scored run (moving average); None before the first."""
        self.skipped_budget = 0
        """Calls the budget skipped, all periods."""
        self._arrival_rate = 0.0
        self._last_arrival: float | None = None
        self._period = self._period_of(clock())
        # The probability each base rate got at the moment `_decided_at` (see `admit`).
        self._decided_at: float | None = None
        self._decided: dict[float, float] = {}

    def _period_of(self, now: float) -> int:
        return int(now // self.period_s)

    def _roll(self, now: float) -> None:
        period = self._period_of(now)
        if period != self._period:
            self._period, self.spent = period, 0.0

    @property
    def remaining_usd(self) -> float:
        """What the period has left, reservations taken off (never below 0)."""
        return max(self.usd_per_period - self.spent - self.reserved, 0.0)

    def effective_rate(self, base_rate: float, now: float | None = None) -> float:
        """The sampling probability the budget allows now, at most `base_rate`."""
        with self._lock:
            return self._rate(base_rate, self._clock() if now is None else now)

    def _rate(self, base_rate: float, now: float) -> float:
        cost = self.cost_per_run
        if cost is None or cost <= 0:
            return base_rate
        left = self.remaining_usd
        if left <= 0:
            return 0.0
        time_left = (self._period + 1) * self.period_s - now
        demand = self._arrival_rate * cost * max(time_left, 1.0)
        return base_rate if demand <= 0 else min(base_rate, left / demand)

    def _arrive(self, now: float) -> None:
        last = self._last_arrival
        tau = self.rate_window_s
        if last is None:
            self._arrival_rate = 0.0
        else:
            self._arrival_rate *= math.exp(-max(now - last, 0.0) / tau)
        self._arrival_rate += 1.0 / tau
        self._last_arrival = now

    def admit(
        self, fraction: float, base_rate: float, now: float | None = None
    ) -> tuple[BudgetDecision, float]:
        """Whether a call whose trace fraction is `fraction` (0 <= f < 1) is scored under a
        sampling rate of `base_rate`, and the expected cost it reserved (pass it to `settle`).

        The scorers of one call pass the same `now` (one clock reading per call): they then
        all see the probability the first of them saw, so a trace is in or out for every scorer
        of the same rate."""
        with self._lock:
            now = self._clock() if now is None else now
            self._roll(now)
            rate = self._decided.get(base_rate) if now == self._decided_at else None
            if rate is None:
                if now != self._decided_at:
                    self._decided_at, self._decided = now, {}
                rate = self._decided[base_rate] = self._rate(base_rate, now)
            self._arrive(now)
            if fraction >= base_rate:
                return "not_sampled", 0.0
            if fraction >= rate:
                self.skipped_budget += 1
                return "skipped_budget", 0.0
            expected = self.cost_per_run or 0.0
            if expected > 0 and self.spent + self.reserved + expected > self.usd_per_period:
                self.skipped_budget += 1
                return "skipped_budget", 0.0
            self.reserved += expected
            return "sampled", expected

    def settle(self, reserved: float, cost_usd: float | None) -> None:
        """A sampled run finished: release its reservation and count what it cost (None when
        unknown: the reservation is counted instead)."""
        with self._lock:
            self._roll(self._clock())
            self.reserved = max(self.reserved - reserved, 0.0)
            actual = reserved if cost_usd is None else max(cost_usd, 0.0)
            self.spent += actual
            if cost_usd is not None:
                previous = self.cost_per_run
                self.cost_per_run = (
                    actual
                    if previous is None
                    else previous + self.cost_weight * (actual - previous)
                )
