"""`Budgets`: the spend budgets live scoring obeys, one shared by every scorer and/or one per
scorer (docs/live.md, "Spend budgets"), and what a sampled run holds of them until it is settled.

Every place that decides live sampling (the engine, serve's admission) asks `Budgets.admit` for
each scorer whose filter kept the call, with the trace's fraction and one clock reading per
call; a sampled run carries its `Hold` to where it is scored, which settles it with the judge
records' cost (`settle`) or gives it back when the run never runs (`release`). The budgets'
effective sampling rates and remaining spend are pulled by telemetry (`BudgetReadings`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..core.events import Observers
from ..core.records import judge_cost_usd
from ..core.scorer import Scorer
from ..sinks.record import ScoreRecord
from .events import BudgetReading, BudgetReadings
from .spend_budget import BudgetDecision, Reservation, SpendBudget

__all__ = ["SHARED_NAME", "Budgets", "Hold", "budgeted", "record_cost_usd"]

SHARED_NAME = "all"
"""The name of the budget every scorer shares (a per-scorer budget is `scorer:<id>`)."""


class Hold:
    """What one sampled run reserved, given up exactly once (by `settle` or `release`)."""

    __slots__ = ("_lock", "_reservations")

    def __init__(self, reservations: tuple[Reservation, ...]) -> None:
        self._reservations = reservations
        self._lock = threading.Lock()

    @property
    def reservations(self) -> tuple[Reservation, ...]:
        return self._reservations

    def take(self) -> tuple[Reservation, ...]:
        with self._lock:
            taken, self._reservations = self._reservations, ()
        return taken


def record_cost_usd(record: ScoreRecord) -> float | None:
    """What the run's judge calls cost (every attempt), None when no cost was known."""
    result = record.result
    return judge_cost_usd(None if result is None else result.judge)


def budgeted(scorer: Scorer, *, has_budget: bool) -> bool:
    """Whether `scorer` samples under a budget when one applies to it (`has_budget`): only a
    judged scorer spends anything. The one rule for `Budgets.governs` and for deciders that
    know the configuration before any `Budgets` exists (serve's trace intake)."""
    return has_budget and scorer.has_judge


@dataclass(frozen=True)
class Budgets:
    """`shared` binds every judged scorer's spend together; `per_scorer` each scorer (by
    scorer id) on its own. A scorer under both is sampled only when both admit it; a scorer
    without a judge spends nothing and is never under a budget."""

    shared: SpendBudget | None = None
    per_scorer: Mapping[str, SpendBudget] = field(default_factory=dict)
    clock: Callable[[], float] = time.time

    @classmethod
    def build(
        cls,
        usd_per_day: float | None = None,
        per_scorer: Mapping[str, float] | None = None,
        *,
        redis_url: str | None = None,
        prefix: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> Budgets | None:
        """A budget of `usd_per_day` shared by every scorer and/or one per scorer id
        (`per_scorer`), kept in this process, or in Redis at `redis_url` (shared by every
        process naming it, under `prefix`); None when no budget is set."""
        if usd_per_day is None and not per_scorer:
            return None

        def budget(name: str, usd: float) -> SpendBudget:
            if redis_url is None:
                return SpendBudget(usd, name=name, clock=clock)
            from .redis_budget import DEFAULT_PREFIX, RedisLedger

            ledger = RedisLedger(redis_url, name, prefix=prefix or DEFAULT_PREFIX)
            return SpendBudget(usd, name=name, ledger=ledger, clock=clock)

        return cls(
            None if usd_per_day is None else budget(SHARED_NAME, usd_per_day),
            {
                scorer_id: budget(f"scorer:{scorer_id}", usd)
                for scorer_id, usd in (per_scorer or {}).items()
            },
            clock,
        )

    def __bool__(self) -> bool:
        return self.shared is not None or bool(self.per_scorer)

    def governs(self, scorer: Scorer) -> bool:
        """Whether `scorer` samples under a budget (`budgeted`)."""
        return budgeted(scorer, has_budget=bool(self.of(scorer.id)))

    def of(self, scorer_id: str) -> tuple[SpendBudget, ...]:
        own = self.per_scorer.get(scorer_id)
        return tuple(budget for budget in (own, self.shared) if budget is not None)

    def _by_name(self) -> dict[str, SpendBudget]:
        found = {budget.name: budget for budget in self.per_scorer.values()}
        if self.shared is not None:
            found[self.shared.name] = self.shared
        return found

    @property
    def remote(self) -> bool:
        return any(budget.ledger.remote for budget in self._by_name().values())

    def now(self) -> float:
        """The one clock reading a call's decisions share."""
        return self.clock()

    def admit(
        self, scorer_id: str, fraction: float, base_rate: float | None, now: float
    ) -> tuple[BudgetDecision, Hold | None]:
        """The decision for one scorer on one call whose trace fraction is `fraction`, under
        the scorer's sampling rate (None: every call), and what a sampled run holds."""
        rate = 1.0 if base_rate is None else base_rate
        taken: list[Reservation] = []
        decision: BudgetDecision = "sampled"
        for budget in self.of(scorer_id):
            # Every budget hears every arrival, also after another one skipped the call.
            verdict, reservation = budget.admit(fraction, rate, now)
            if reservation is not None:
                taken.append(reservation)
            if decision == "sampled":
                decision = verdict
        if decision != "sampled":
            self._give_back(taken, None)
            return decision, None
        return "sampled", Hold(tuple(taken))

    def _give_back(self, reservations: Iterable[Reservation], cost: float | None) -> None:
        budgets = self._by_name()
        for reservation in reservations:
            budget = budgets.get(reservation.budget)
            if budget is None:
                continue
            if cost is None:
                budget.release(reservation)
            else:
                budget.settle(reservation, cost)

    def settle(self, hold: Hold | None, record: ScoreRecord) -> None:
        """A sampled run ended with `record`: its judge calls' cost settles what it held (an
        unknown cost counts the reservation)."""
        self.settle_cost(hold, record_cost_usd(record))

    def settle_cost(self, hold: Hold | None, cost: float | None) -> None:
        """`settle` with the run's cost itself (None: unknown)."""
        if hold is None:
            return
        budgets = self._by_name()
        for reservation in hold.take():
            budget = budgets.get(reservation.budget)
            if budget is not None:
                budget.settle(reservation, cost)

    async def asettle(self, hold: Hold | None, record: ScoreRecord) -> None:
        """`settle` from a loop: a Redis ledger's round trip runs in a thread."""
        if hold is None or not hold.reservations:
            return
        if self.remote:
            await asyncio.to_thread(self.settle, hold, record)
        else:
            self.settle(hold, record)

    def release(self, hold: Hold | None) -> None:
        """A sampled run that will not run: what it held is given back, no cost counted."""
        if hold is not None:
            self._give_back(hold.take(), None)

    def readings(self, rates: Mapping[str, float | None]) -> list[BudgetReading]:
        """One reading per scorer under a budget (`rates`: each scorer id's sampling rate):
        the sampling rate its budgets allow now, and each budget's remaining spend."""
        now = self.clock()
        readings: list[BudgetReading] = []
        for scorer_id, base_rate in rates.items():
            budgets = self.of(scorer_id)
            if not budgets:
                continue
            rate = 1.0 if base_rate is None else base_rate
            effective = min(budget.effective_rate(rate, now) for budget in budgets)
            tightest = min(budgets, key=lambda budget: budget.remaining_usd)
            readings.append(
                BudgetReading(
                    scorer_id,
                    tightest.name,
                    effective,
                    rate,
                    tightest.remaining_usd,
                    tightest.usd_per_period,
                )
            )
        return readings

    def report_to(
        self, observers: Observers, rates: Mapping[Scorer, float | None]
    ) -> Callable[[], None]:
        """Register the readings of the scorers it governs (`rates`: each scorer's sampling
        rate) on `observers`, where telemetry pulls them; returns the undo."""
        fixed = {scorer.id: rate for scorer, rate in rates.items() if self.governs(scorer)}
        return observers.register_source(
            BudgetReadings, lambda: BudgetReadings(tuple(self.readings(fixed)))
        )
