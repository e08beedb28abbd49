"""Run-to-run comparison of two evaluations' result records (the `--out` JSONL lines).

Items are matched by scorer id and input (the n-th occurrence of an input matches the n-th), so
a reordered or extended dataset still compares. Deltas are signed so that a positive number is
always better: a rise of a `lower_is_better` scorer (toxicity, hallucination) is a regression.
The CI gate fails when a scorer's mean got worse by more than `max_drop`, a share of the
scorer's scale (0.05: five points of a 0-1 score).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_MAX_DROP", "Comparison", "ItemChange", "ScorerDelta", "compare_records"]

DEFAULT_MAX_DROP = 0.05

_Key = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One (item, scorer) pair whose result changed between the runs."""

    scorer_id: str
    item: int
    input: Any
    baseline: float | None
    candidate: float | None
    # Positive: better; negative: worse (on the scorer's scale). None when one side failed.
    change: float | None
    candidate_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "scorer_id": self.scorer_id,
            "item": self.item,
            "input": self.input,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "change": self.change,
            "candidate_error": self.candidate_error,
        }


@dataclass(slots=True)
class ScorerDelta:
    scorer_id: str
    direction: str
    scale: float
    baseline_mean: float | None
    candidate_mean: float | None
    baseline_runs: int
    candidate_runs: int
    regressed: int = 0
    improved: int = 0
    newly_failed: int = 0

    @property
    def delta(self) -> float | None:
        """candidate mean - baseline mean, as the scores read (not direction-adjusted)."""
        if self.baseline_mean is None or self.candidate_mean is None:
            return None
        return self.candidate_mean - self.baseline_mean

    @property
    def change(self) -> float | None:
        """The mean's change as a share of the scale, positive when better."""
        delta = self.delta
        if delta is None:
            return None
        signed = -delta if self.direction == "lower_is_better" else delta
        return signed / self.scale if self.scale else signed

    def to_dict(self) -> dict[str, Any]:
        return {
            "scorer_id": self.scorer_id,
            "direction": self.direction,
            "baseline_mean": self.baseline_mean,
            "candidate_mean": self.candidate_mean,
            "delta": self.delta,
            "baseline_runs": self.baseline_runs,
            "candidate_runs": self.candidate_runs,
            "regressed": self.regressed,
            "improved": self.improved,
            "newly_failed": self.newly_failed,
        }


@dataclass(slots=True)
class Comparison:
    scorers: dict[str, ScorerDelta]
    regressed: list[ItemChange] = field(default_factory=list)
    improved: list[ItemChange] = field(default_factory=list)
    only_in_baseline: int = 0
    only_in_candidate: int = 0
    max_drop: float = DEFAULT_MAX_DROP

    def problems(self) -> list[str]:
        """Why the gate fails: a scorer's mean worse by more than `max_drop`, or gone."""
        found = []
        for delta in self.scorers.values():
            if delta.baseline_mean is not None and delta.candidate_mean is None:
                found.append(f"regression: {delta.scorer_id} has no score in the candidate run")
                continue
            change = delta.change
            if change is not None and change < -self.max_drop - 1e-12:
                found.append(
                    f"regression: {delta.scorer_id} mean {delta.baseline_mean:.3f} -> "
                    f"{delta.candidate_mean:.3f} ({-change:.1%} of its scale worse, "
                    f"more than the allowed {self.max_drop:.1%})"
                )
        return found

    @property
    def passed(self) -> bool:
        return not self.problems()

    def to_dict(self) -> dict[str, Any]:
        return {
            "scorers": {key: value.to_dict() for key, value in self.scorers.items()},
            "regressed": [change.to_dict() for change in self.regressed],
            "improved": [change.to_dict() for change in self.improved],
            "only_in_baseline": self.only_in_baseline,
            "only_in_candidate": self.only_in_candidate,
            "max_drop": self.max_drop,
            "problems": self.problems(),
            "passed": self.passed,
        }


def _keyed(records: Iterable[Mapping[str, Any]]) -> dict[_Key, Mapping[str, Any]]:
    seen: Counter[tuple[str, str]] = Counter()
    keyed: dict[_Key, Mapping[str, Any]] = {}
    for record in sorted(records, key=lambda r: int(r.get("item") or 0)):
        scorer_id = str(record.get("scorer_id"))
        text = json.dumps(record.get("input"), sort_keys=True, default=str)
        occurrence = seen[(scorer_id, text)]
        seen[(scorer_id, text)] += 1
        keyed[(scorer_id, text, occurrence)] = record
    return keyed


def _score(record: Mapping[str, Any] | None) -> float | None:
    if record is None or record.get("error"):
        return None
    value = record.get("score")
    return float(value) if isinstance(value, int | float) else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def compare_records(
    baseline: Iterable[Mapping[str, Any]],
    candidate: Iterable[Mapping[str, Any]],
    *,
    max_drop: float = DEFAULT_MAX_DROP,
    tolerance: float = 1e-9,
) -> Comparison:
    """Per-scorer mean deltas and the items that got worse or better (by more than
    `tolerance`, as a share of the scale), from two runs' records."""
    old, new = _keyed(baseline), _keyed(candidate)
    scorer_ids = list(dict.fromkeys([key[0] for key in old] + [key[0] for key in new]))
    deltas: dict[str, ScorerDelta] = {}
    for scorer_id in scorer_ids:
        sample = next((r for k, r in [*new.items(), *old.items()] if k[0] == scorer_id), {})
        old_scores = [
            s for k, r in old.items() if k[0] == scorer_id if (s := _score(r)) is not None
        ]
        new_scores = [
            s for k, r in new.items() if k[0] == scorer_id if (s := _score(r)) is not None
        ]
        deltas[scorer_id] = ScorerDelta(
            scorer_id=scorer_id,
            direction=str(sample.get("direction") or "higher_is_better"),
            scale=float(sample.get("scale") or 1.0),
            baseline_mean=_mean(old_scores),
            candidate_mean=_mean(new_scores),
            baseline_runs=sum(1 for k in old if k[0] == scorer_id),
            candidate_runs=sum(1 for k in new if k[0] == scorer_id),
        )
    comparison = Comparison(scorers=deltas, max_drop=max_drop)
    for key in old.keys() & new.keys():
        _classify(comparison, deltas[key[0]], old[key], new[key], tolerance)
    comparison.regressed.sort(key=lambda c: (c.change is not None, c.change or 0.0, c.item))
    comparison.improved.sort(key=lambda c: (-(c.change or 0.0), c.item))
    comparison.only_in_baseline = len(old.keys() - new.keys())
    comparison.only_in_candidate = len(new.keys() - old.keys())
    return comparison


def _classify(
    comparison: Comparison,
    delta: ScorerDelta,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    tolerance: float,
) -> None:
    old_score, new_score = _score(before), _score(after)
    item = int(after.get("item") or 0)
    if old_score is not None and new_score is None and after.get("error"):
        delta.regressed += 1
        delta.newly_failed += 1
        comparison.regressed.append(
            ItemChange(
                delta.scorer_id,
                item,
                after.get("input"),
                old_score,
                None,
                None,
                str(after.get("error")),
            )
        )
        return
    if old_score is None or new_score is None:
        return
    signed = new_score - old_score
    if delta.direction == "lower_is_better":
        signed = -signed
    change = signed / delta.scale if delta.scale else signed
    if abs(change) <= tolerance:
        return
    entry = ItemChange(delta.scorer_id, item, after.get("input"), old_score, new_score, change)
    if change < 0:
        delta.regressed += 1
        comparison.regressed.append(entry)
    else:
        delta.improved += 1
        comparison.improved.append(entry)
