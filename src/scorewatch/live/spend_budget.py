"""A judge spend budget that steers live sampling (issue #33, part 2; docs/live.md).

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

Spending and reservations live in a `Ledger` (`live/budget_ledger.py`): this process's, or
Redis's (`live/redis_budget.py`), shared by every process naming it; the arrival rate then is
the sum of every process's. A ledger that cannot be reached skips the call (the budget fails
closed: it exists to bound spend), with a warning at most once a minute.

The arrival rate and cost per run are exponentially weighted moving averages (time constant
`rate_window_s`, weight `cost_weight`), so a burst lowers the probability within about a window
and its end raises it again.

>>> budget = SpendBudget(usd_per_day=1.0, clock=lambda: 0.0)
>>> budget.admit(0.5, base_rate=1.0)  # no cost measured yet: the configured rate holds
('sampled', Reservation(budget='budget', period=0, amount=0.0))
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from .._throttled_log import ThrottledLog
from .budget_ledger import Ledger, MemoryLedger, Totals

__all__ = ["DAY_S", "BudgetDecision", "Reservation", "SpendBudget"]

BudgetDecision = Literal["sampled", "not_sampled", "skipped_budget"]

DAY_S: Final = 86_400.0

_warn = ThrottledLog(logging.getLogger("scorewatch.live"))


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one admitted run holds of the budget named `budget` in `period`, until settled."""

    budget: str
    period: int
    amount: float


class SpendBudget:
    """`usd_per_day` of judge spend per period of `period_s` seconds (periods start at multiples
    of `period_s` since the epoch: UTC days by default), kept in `ledger` (default: this
    process's). `name` tells budgets apart in a shared ledger, metrics and reservations.
    A remote ledger's totals are read again at least every `sync_s` seconds. Thread-safe."""

    def __init__(
        self,
        usd_per_day: float,
        *,
        name: str = "budget",
        ledger: Ledger | None = None,
        period_s: float = DAY_S,
        rate_window_s: float = 300.0,
        cost_weight: float = 0.05,
        sync_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(usd_per_day, bool) or not (
            isinstance(usd_per_day, int | float) and math.isfinite(usd_per_day) and usd_per_day > 0
        ):
            raise ValueError(f"usd_per_day must be a positive number, got {usd_per_day!r}")
        self.name = name
        self.usd_per_day = float(usd_per_day)
        self.usd_per_period = usd_per_day * period_s / DAY_S
        self.period_s = period_s
        self.rate_window_s = rate_window_s
        self.cost_weight = cost_weight
        self.sync_s = sync_s
        self.ledger: Ledger = MemoryLedger() if ledger is None else ledger
        self._clock = clock
        self._lock = threading.Lock()
        self._totals = Totals()
        self._synced_at = -math.inf
        self.cost_per_run: float | None = None
        """Measured cost of one scored run (moving average); None before the first."""
        self.skipped_budget = 0
        """Calls the budget skipped, all periods, in this process."""
        self._arrival_rate = 0.0
        self._last_arrival: float | None = None
        self._period = self._period_of(clock())
        # The probability each base rate got at the moment `_decided_at` (see `admit`).
        self._decided_at: float | None = None
        self._decided: dict[float, float] = {}
        self.last_rate: dict[float, float] = {}
        """The latest effective probability per base rate (what the gauges report)."""

    def _period_of(self, now: float) -> int:
        return int(now // self.period_s)

    @property
    def spent(self) -> float:
        """Settled spend of the current period, as last seen."""
        return self._totals.spent

    @property
    def reserved(self) -> float:
        """Expected cost of the runs admitted and not yet settled, as last seen."""
        return self._totals.reserved

    @property
    def remaining_usd(self) -> float:
        """What the period has left, reservations taken off (never below 0)."""
        return max(self.usd_per_period - self._totals.spent - self._totals.reserved, 0.0)

    def effective_rate(self, base_rate: float, now: float | None = None) -> float:
        """The sampling probability the budget allows now, at most `base_rate`."""
        with self._lock:
            now = self._clock() if now is None else now
            self._roll(now)
            return self._rate(base_rate, now)

    # -- the controller (under the lock) ---------------------------------------------------------

    def _roll(self, now: float) -> None:
        period = self._period_of(now)
        if period != self._period:
            self._period, self._synced_at = period, -math.inf
            self._totals = Totals()
        if self.ledger.remote and now - self._synced_at >= self.sync_s:
            self._refresh(now, lambda: self.ledger.totals(self._period, self._arrival_rate))

    def _refresh(self, now: float, ask: Callable[[], Totals]) -> bool:
        try:
            totals = ask()
        except Exception as error:
            _warn.warning(
                f"budget:{self.name}",
                "spend budget %r: its ledger failed (%s); calls are skipped until it answers",
                self.name,
                type(error).__name__,
            )
            return False
        self._totals = totals
        if totals.cost_per_run is not None:  # measured by every process sharing the ledger
            self.cost_per_run = totals.cost_per_run
        self._synced_at = now
        return True

    def _rate(self, base_rate: float, now: float) -> float:
        cost = self.cost_per_run
        if cost is None or cost <= 0:
            return base_rate if self.remaining_usd > 0 else 0.0
        left = self.remaining_usd
        if left <= 0:
            return 0.0
        time_left = (self._period + 1) * self.period_s - now
        arrivals = self._arrival_rate + self._totals.others_rate
        demand = arrivals * cost * max(time_left, 1.0)
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

    def _skip(self) -> tuple[BudgetDecision, None]:
        self.skipped_budget += 1
        return "skipped_budget", None

    # -- deciding and settling -------------------------------------------------------------------

    def admit(
        self, fraction: float, base_rate: float, now: float | None = None
    ) -> tuple[BudgetDecision, Reservation | None]:
        """Whether a call whose trace fraction is `fraction` (0 <= f < 1) is scored under a
        sampling rate of `base_rate`, and what it reserved (pass it to `settle`).

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
                self.last_rate[base_rate] = rate
            self._arrive(now)
            if fraction >= base_rate:
                return "not_sampled", None
            if fraction >= rate:
                return self._skip()
            expected = self.cost_per_run or 0.0
            taken = False

            def reserve() -> Totals:
                nonlocal taken
                taken, totals = self.ledger.reserve(
                    self._period, expected, self.usd_per_period, self._arrival_rate
                )
                return totals

            if not self._refresh(now, reserve) or not taken:
                return self._skip()
            return "sampled", Reservation(self.name, self._period, expected)

    def settle(self, reservation: Reservation | None, cost_usd: float | None) -> None:
        """A sampled run finished: release its reservation and count what it cost (None when
        unknown: the reservation is counted instead)."""
        reserved = 0.0 if reservation is None else reservation.amount
        period = self._period if reservation is None else reservation.period
        actual = reserved if cost_usd is None else max(cost_usd, 0.0)
        with self._lock:
            if cost_usd is not None:
                previous = self.cost_per_run
                self.cost_per_run = (
                    actual
                    if previous is None
                    else previous + self.cost_weight * (actual - previous)
                )
            now = self._clock()
            self._roll(now)
            weight = -1.0 if cost_usd is None else self.cost_weight
            if period == self._period:
                self._refresh(now, lambda: self.ledger.settle(period, reserved, actual, weight))
            else:  # a run of a past period: its ledger entry, not this period's totals
                self._settle_past(period, reserved, actual, weight)

    def release(self, reservation: Reservation | None) -> None:
        """An admitted run that will not run (refused by a full queue, given up at shutdown):
        give back what it reserved, counting no cost and measuring nothing."""
        if reservation is None or reservation.amount == 0:
            return
        with self._lock:
            if reservation.period == self._period:
                self._refresh(
                    self._clock(),
                    lambda: self.ledger.settle(reservation.period, reservation.amount, 0.0),
                )
            else:
                self._settle_past(reservation.period, reservation.amount, 0.0)

    def _settle_past(self, period: int, reserved: float, cost: float, weight: float = -1.0) -> None:
        try:
            self.ledger.settle(period, reserved, cost, weight)
        except Exception as error:
            _warn.warning(
                f"budget:{self.name}",
                "spend budget %r: settling failed (%s)",
                self.name,
                type(error).__name__,
            )
