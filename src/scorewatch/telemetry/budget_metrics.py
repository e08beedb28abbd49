"""Spend budget gauges: the telemetry side of live scoring's `BudgetReadings` (live/budgets.py).

Per budgeted scorer: the sampling probability its budgets allow now, its configured rate beside
it, and the remaining spend and daily limit of its tightest budget. Every process sharing a
budget through Redis reports the same remaining spend, so dashboards take `min by (budget)`.
The decisions a budget skips are counted with the other live decisions (`skipped_budget`).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

from opentelemetry.metrics import Meter

from ..live.events import BudgetReading, BudgetReadings
from . import names
from .pulled import Source, per_reading, pulled

__all__ = ["BudgetMetrics"]


class BudgetMetrics:
    """The budget gauges, read from `source()` when collected."""

    def __init__(self, meter: Meter, source: Source) -> None:
        gauges: tuple[tuple[str, str, str, Callable[[BudgetReading], float]], ...] = (
            (names.METRIC_BUDGET_SAMPLING_RATE, names.UNIT_DIMENSIONLESS,
             "Sampling probability the spend budgets allow now", attrgetter("effective_rate")),
            (names.METRIC_BUDGET_CONFIGURED_RATE, names.UNIT_DIMENSIONLESS,
             "Configured sampling rate of a budgeted scorer", attrgetter("base_rate")),
            (names.METRIC_BUDGET_REMAINING, names.UNIT_COST_USD,
             "Judge spend left of the tightest budget this period", attrgetter("remaining_usd")),
            (names.METRIC_BUDGET_LIMIT, names.UNIT_COST_USD,
             "Judge spend budget per period", attrgetter("limit_usd")),
        )  # fmt: skip
        for name, unit, description, read in gauges:
            meter.create_observable_gauge(
                name,
                callbacks=[pulled(source, per_reading(BudgetReadings.latest, read, _labels))],
                unit=unit,
                description=description,
            )


def _labels(reading: BudgetReading) -> dict[str, str]:
    return {names.ATTR_EVALUATION_NAME: reading.scorer_id, names.ATTR_BUDGET: reading.budget}
