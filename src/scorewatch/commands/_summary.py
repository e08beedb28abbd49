"""Per-scorer figures of an evaluation: score distribution, failures, judge usage and cost."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ScorerSummary", "percentile", "summarize_records"]


def percentile(sorted_values: list[float], fraction: float) -> float | None:
    """Linear-interpolated percentile of already sorted values."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    weight = position - low
    return sorted_values[low] * (1 - weight) + sorted_values[high] * weight


@dataclass(slots=True)
class ScorerSummary:
    scorer_id: str
    scores: list[float] = field(default_factory=list)
    failures: int = 0
    not_scorable: int = 0
    judge_calls: int = 0
    tokens: int = 0
    estimated_cost_usd: float = 0.0
    has_cost: bool = False

    @property
    def runs(self) -> int:
        return len(self.scores) + self.failures + self.not_scorable

    @property
    def mean(self) -> float | None:
        return sum(self.scores) / len(self.scores) if self.scores else None

    def quantiles(self) -> tuple[float | None, float | None, float | None]:
        ordered = sorted(self.scores)
        return percentile(ordered, 0.1), percentile(ordered, 0.5), percentile(ordered, 0.9)


def summarize_records(records: Iterable[Mapping[str, Any]]) -> dict[str, ScorerSummary]:
    """Summaries keyed by scorer id, from result records (the `--out` JSONL lines)."""
    summaries: dict[str, ScorerSummary] = {}
    for record in records:
        scorer_id = str(record.get("scorer_id"))
        summary = summaries.setdefault(scorer_id, ScorerSummary(scorer_id))
        if record.get("error"):
            summary.failures += 1
        elif record.get("not_scorable"):
            summary.not_scorable += 1
        elif isinstance(record.get("score"), int | float):
            summary.scores.append(float(record["score"]))
        summary.judge_calls += int(record.get("judge_calls") or 0)
        summary.tokens += int(record.get("tokens") or 0)
        cost = record.get("estimated_cost_usd")
        if isinstance(cost, int | float):
            summary.estimated_cost_usd += float(cost)
            summary.has_cost = True
    return summaries
