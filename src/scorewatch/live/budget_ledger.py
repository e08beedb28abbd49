"""Where a spend budget keeps its spending and reservations (`live/spend_budget.py` decides).

A ledger holds, per period, the settled spend and the expected cost of the runs admitted and not
yet settled. `MemoryLedger` keeps them in this process; `live/redis_budget.py`'s `RedisLedger`
keeps them in Redis so that every serve replica and worker naming the same Redis spends one
budget. Either way a reservation is checked and taken in one step, so two deciders never both
take the last of a budget.

Each answer carries the totals (`Totals`) as the ledger saw them then, including the arrival
rate of every other process sharing it, so the decider paces with what everyone spends and
everyone receives.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Ledger", "MemoryLedger", "Totals"]


@dataclass(frozen=True, slots=True)
class Totals:
    """A ledger's view of one period: settled `spent`, `reserved` for runs in flight, the
    calls per second the other processes sharing it reported (0 for an in-process ledger), and
    the cost per run every process measured together (None: the ledger keeps none)."""

    spent: float = 0.0
    reserved: float = 0.0
    others_rate: float = 0.0
    cost_per_run: float | None = None


class Ledger(Protocol):
    """Spending and reservations per period (an int: the period's number since the epoch)."""

    remote: bool
    """True when an answer is a network round trip (an async caller then hands it to a thread)."""

    def reserve(
        self, period: int, expected: float, limit: float, arrival_rate: float
    ) -> tuple[bool, Totals]:
        """Take `expected` USD for a run if the period's spend, reservations and it stay within
        `limit` (with `expected == 0`, while spend and reservations are below it); also report
        this process's `arrival_rate`. Whether it was taken, and the totals after."""
        ...

    def settle(self, period: int, reserved: float, cost: float, weight: float = -1.0) -> Totals:
        """A run of `period` finished: release `reserved`, add `cost` to the spend; a
        `weight` >= 0 also moves a shared cost per run towards `cost` by that weight."""
        ...

    def totals(self, period: int, arrival_rate: float) -> Totals:
        """The period's totals now (reporting this process's `arrival_rate`)."""
        ...


class MemoryLedger:
    """A ledger of this process only: one period at a time (an earlier period's late
    settlements are dropped, as that period's budget no longer binds anything)."""

    remote = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._period: int | None = None
        self._spent = 0.0
        self._reserved = 0.0

    def _at(self, period: int) -> bool:
        """Roll to `period` if it is newer; False for an older one."""
        if self._period is None or period > self._period:
            self._period, self._spent, self._reserved = period, 0.0, 0.0
        return period == self._period

    def _totals(self) -> Totals:
        return Totals(self._spent, self._reserved)

    def reserve(
        self, period: int, expected: float, limit: float, arrival_rate: float
    ) -> tuple[bool, Totals]:
        with self._lock:
            if not self._at(period):
                return False, Totals()
            committed = self._spent + self._reserved
            fits = committed + expected <= limit if expected > 0 else committed < limit
            if fits:
                self._reserved += expected
            return fits, self._totals()

    def settle(self, period: int, reserved: float, cost: float, weight: float = -1.0) -> Totals:
        with self._lock:
            if self._at(period):
                self._reserved = max(self._reserved - reserved, 0.0)
                self._spent += cost
            return self._totals()

    def totals(self, period: int, arrival_rate: float) -> Totals:
        with self._lock:
            return self._totals() if self._at(period) else Totals()
