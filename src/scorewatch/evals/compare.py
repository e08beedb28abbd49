"""Run-to-run comparison of two evaluations' result records (the `--out` JSONL lines).

Items are matched by scorer id and input (the n-th item with an input matches the n-th), so a
reordered or extended dataset still compares; the repeated judgements of one item
(`eval --repeat`) count as that item's mean. Deltas are signed so that a positive number is
always better: a rise of a `lower_is_better` scorer (toxicity, hallucination) is a regression.

The CI gate fails when a scorer's mean got worse by more than `max_drop` (a share of its scale:
0.05 is five points of a 0-1 score) with the chosen `confidence`: the whole confidence interval
of the change (`evals.noise.change_interval`, item sampling and judge noise together) lies below
`-max_drop`. A drop inside the noise passes, and says so.

A comparison never mixes scorer versions: when a scorer's version (its fingerprint, on every
record) differs between the runs, `compare_records` raises `ScorewatchError`
(`SCOREWATCH_SCORER_CHANGED`) naming the scorer and both versions, unless
`allow_scorer_change=True`, which compares anyway and lists the scorers that changed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ScorewatchError
from ._fields import field_values
from .noise import DEFAULT_CONFIDENCE, ChangeInterval, change_interval

__all__ = [
    "DEFAULT_MAX_DROP",
    "SCORER_CHANGED",
    "Comparison",
    "ItemChange",
    "ScorerChange",
    "ScorerDelta",
    "compare_records",
]

DEFAULT_MAX_DROP = 0.05
SCORER_CHANGED = "SCOREWATCH_SCORER_CHANGED"

_Key = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class ScorerChange:
    """A scorer whose version differs between the runs (its versions in each)."""

    scorer_id: str
    baseline_versions: tuple[str, ...]
    candidate_versions: tuple[str, ...]

    def describe(self) -> str:
        before = ", ".join(self.baseline_versions)
        after = ", ".join(self.candidate_versions)
        return f"scorer {self.scorer_id!r} changed version: {before} (baseline) -> {after}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scorer_id": self.scorer_id,
            "baseline_versions": list(self.baseline_versions),
            "candidate_versions": list(self.candidate_versions),
        }


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
        return field_values(self)


@dataclass(slots=True)
class ScorerDelta:
    """One scorer's means in both runs (each the mean of its items' means), and the confidence
    `interval` of candidate - baseline (None with fewer than two items on a side)."""

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
    interval: ChangeInterval | None = None

    @property
    def delta(self) -> float | None:
        """candidate mean - baseline mean, as the scores read (not direction-adjusted)."""
        if self.baseline_mean is None or self.candidate_mean is None:
            return None
        return self.candidate_mean - self.baseline_mean

    def _as_change(self, delta: float) -> float:
        signed = -delta if self.direction == "lower_is_better" else delta
        return signed / self.scale if self.scale else signed

    @property
    def change(self) -> float | None:
        """The mean's change as a share of the scale, positive when better."""
        delta = self.delta
        return None if delta is None else self._as_change(delta)

    @property
    def change_interval(self) -> tuple[float, float] | None:
        """`interval` as `change` reads (a share of the scale, positive when better)."""
        if self.interval is None:
            return None
        ends = sorted((self._as_change(self.interval.low), self._as_change(self.interval.high)))
        return ends[0], ends[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scorer_id": self.scorer_id,
            "direction": self.direction,
            "baseline_mean": self.baseline_mean,
            "candidate_mean": self.candidate_mean,
            "delta": self.delta,
            "interval": None if self.interval is None else self.interval.to_dict(),
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
    confidence: float = DEFAULT_CONFIDENCE
    # Scorers whose version differs between the runs (compared only when allowed).
    changed_scorers: list[ScorerChange] = field(default_factory=list)
    # Scorers whose records carry no version on one side (written before records had one).
    unversioned: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Why the gate fails: a scorer's mean worse by more than `max_drop` with the chosen
        confidence (or by more than it without an interval to tell), or gone."""
        found = []
        for delta in self.scorers.values():
            if delta.baseline_mean is not None and delta.candidate_mean is None:
                found.append(f"regression: {delta.scorer_id} has no score in the candidate run")
                continue
            change = delta.change
            if change is None or change >= -self.max_drop - 1e-12:
                continue
            ends = delta.change_interval
            if ends is None:
                found.append(
                    f"regression: {delta.scorer_id} mean {delta.baseline_mean:.3f} -> "
                    f"{delta.candidate_mean:.3f} ({-change:.1%} of its scale worse, "
                    f"more than the allowed {self.max_drop:.1%}; too few items for an interval)"
                )
            elif ends[1] < -self.max_drop - 1e-12:
                found.append(
                    f"regression: {delta.scorer_id} mean {delta.baseline_mean:.3f} -> "
                    f"{delta.candidate_mean:.3f} ({-change:.1%} of its scale worse; "
                    f"{self.confidence:.0%} interval of the change "
                    f"[{ends[0]:+.1%}, {ends[1]:+.1%}], all beyond the allowed "
                    f"-{self.max_drop:.1%})"
                )
        return found

    def within_noise(self) -> list[str]:
        """Drops beyond `max_drop` whose interval still reaches it: not failed, but said."""
        notes = []
        for delta in self.scorers.values():
            change, ends = delta.change, delta.change_interval
            if change is None or ends is None or change >= -self.max_drop - 1e-12:
                continue
            if ends[1] >= -self.max_drop - 1e-12:
                notes.append(
                    f"within the noise: {delta.scorer_id} mean {delta.baseline_mean:.3f} -> "
                    f"{delta.candidate_mean:.3f} ({-change:.1%} of its scale worse), but its "
                    f"{self.confidence:.0%} interval [{ends[0]:+.1%}, {ends[1]:+.1%}] reaches "
                    f"the allowed -{self.max_drop:.1%}: not a failure"
                )
        return notes

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
            "confidence": self.confidence,
            "changed_scorers": [change.to_dict() for change in self.changed_scorers],
            "unversioned": self.unversioned,
            "problems": self.problems(),
            "within_noise": self.within_noise(),
            "passed": self.passed,
        }


@dataclass(slots=True)
class _Item:
    """One item of one scorer in one run: its records (one per repeat) and their scores."""

    index: int
    records: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def scores(self) -> list[float]:
        return [s for r in self.records if (s := _score(r)) is not None]

    @property
    def mean(self) -> float | None:
        scores = self.scores
        return sum(scores) / len(scores) if scores else None

    @property
    def error(self) -> str | None:
        """The error of a failed item: every judgement of it failed."""
        errors = [str(r["error"]) for r in self.records if r.get("error")]
        return errors[0] if errors and len(errors) == len(self.records) else None


def _keyed(records: Iterable[Mapping[str, Any]]) -> dict[_Key, _Item]:
    """The items by (scorer id, input, occurrence of that input): the repeats of one item (same
    scorer, same item index) share a key."""
    by_item: dict[tuple[str, int], _Item] = {}
    for record in records:
        scorer_id, index = str(record.get("scorer_id")), int(record.get("item") or 0)
        by_item.setdefault((scorer_id, index), _Item(index)).records.append(record)
    seen: Counter[tuple[str, str]] = Counter()
    keyed: dict[_Key, _Item] = {}
    for (scorer_id, _index), item in sorted(by_item.items(), key=lambda entry: entry[0][1]):
        text = json.dumps(item.records[0].get("input"), sort_keys=True, default=str)
        occurrence = seen[(scorer_id, text)]
        seen[(scorer_id, text)] += 1
        keyed[(scorer_id, text, occurrence)] = item
    return keyed


def _score(record: Mapping[str, Any] | None) -> float | None:
    if record is None or record.get("error"):
        return None
    value = record.get("score")
    return float(value) if isinstance(value, int | float) else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _versions(items: Iterable[_Item]) -> tuple[str, ...]:
    found = {
        str(version)
        for item in items
        for record in item.records
        if (version := record.get("scorer_version"))
    }
    return tuple(sorted(found))


def _check_versions(
    scorer_ids: Sequence[str],
    old: Mapping[_Key, _Item],
    new: Mapping[_Key, _Item],
    allow_scorer_change: bool,
) -> tuple[list[ScorerChange], list[str]]:
    changed, unversioned = [], []
    for scorer_id in scorer_ids:
        before = _versions(item for key, item in old.items() if key[0] == scorer_id)
        after = _versions(item for key, item in new.items() if key[0] == scorer_id)
        has_old = any(key[0] == scorer_id for key in old)
        has_new = any(key[0] == scorer_id for key in new)
        if not (has_old and has_new):
            continue
        if not before or not after:
            unversioned.append(scorer_id)
        elif before != after:
            changed.append(ScorerChange(scorer_id, before, after))
    if changed and not allow_scorer_change:
        first = changed[0]
        raise ScorewatchError(
            "; ".join(change.describe() for change in changed)
            + ": scores of different scorer versions are not comparable (pass "
            "--allow-scorer-change to compare them anyway)",
            code=SCORER_CHANGED,
            details={
                "scorerId": first.scorer_id,
                "baselineVersions": list(first.baseline_versions),
                "candidateVersions": list(first.candidate_versions),
            },
        )
    return changed, unversioned


def compare_records(
    baseline: Iterable[Mapping[str, Any]],
    candidate: Iterable[Mapping[str, Any]],
    *,
    max_drop: float = DEFAULT_MAX_DROP,
    confidence: float = DEFAULT_CONFIDENCE,
    allow_scorer_change: bool = False,
    tolerance: float = 1e-9,
) -> Comparison:
    """Per-scorer mean deltas with their `confidence` intervals, and the items that got worse
    or better (by more than `tolerance`, as a share of the scale), from two runs' records.

    Raises `ScorewatchError` (`SCORER_CHANGED`) when a scorer's version differs between the
    runs, unless `allow_scorer_change`."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    old, new = _keyed(baseline), _keyed(candidate)
    scorer_ids = list(dict.fromkeys([key[0] for key in old] + [key[0] for key in new]))
    changed, unversioned = _check_versions(scorer_ids, old, new, allow_scorer_change)
    deltas: dict[str, ScorerDelta] = {}
    for scorer_id in scorer_ids:
        deltas[scorer_id] = _delta(scorer_id, old, new, confidence)
    comparison = Comparison(
        scorers=deltas,
        max_drop=max_drop,
        confidence=confidence,
        changed_scorers=changed,
        unversioned=unversioned,
    )
    for key in old.keys() & new.keys():
        _classify(comparison, deltas[key[0]], old[key], new[key], tolerance)
    comparison.regressed.sort(key=lambda c: (c.change is not None, c.change or 0.0, c.item))
    comparison.improved.sort(key=lambda c: (-(c.change or 0.0), c.item))
    comparison.only_in_baseline = len(old.keys() - new.keys())
    comparison.only_in_candidate = len(new.keys() - old.keys())
    return comparison


def _delta(
    scorer_id: str, old: Mapping[_Key, _Item], new: Mapping[_Key, _Item], confidence: float
) -> ScorerDelta:
    mine_old = {key: item for key, item in old.items() if key[0] == scorer_id}
    mine_new = {key: item for key, item in new.items() if key[0] == scorer_id}
    sample = next((item.records[0] for item in [*mine_new.values(), *mine_old.values()]), {})
    old_means = {key: m for key, item in mine_old.items() if (m := item.mean) is not None}
    new_means = {key: m for key, item in mine_new.items() if (m := item.mean) is not None}
    return ScorerDelta(
        scorer_id=scorer_id,
        direction=str(sample.get("direction") or "higher_is_better"),
        scale=float(sample.get("scale") or 1.0),
        baseline_mean=_mean(list(old_means.values())),
        candidate_mean=_mean(list(new_means.values())),
        baseline_runs=sum(len(item.records) for item in mine_old.values()),
        candidate_runs=sum(len(item.records) for item in mine_new.values()),
        interval=change_interval(old_means, new_means, confidence),
    )


def _classify(
    comparison: Comparison,
    delta: ScorerDelta,
    before: _Item,
    after: _Item,
    tolerance: float,
) -> None:
    old_score, new_score = before.mean, after.mean
    item = after.index
    text = after.records[0].get("input")
    error = after.error
    if old_score is not None and new_score is None and error is not None:
        delta.regressed += 1
        delta.newly_failed += 1
        comparison.regressed.append(
            ItemChange(delta.scorer_id, item, text, old_score, None, None, error)
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
    entry = ItemChange(delta.scorer_id, item, text, old_score, new_score, change)
    if change < 0:
        delta.regressed += 1
        comparison.regressed.append(entry)
    else:
        delta.improved += 1
        comparison.improved.append(entry)
