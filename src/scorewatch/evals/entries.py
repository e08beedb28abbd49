"""Scorers as batch evaluation takes them: bare, or with a pass threshold."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError

__all__ = ["INVALID_SCORER_THRESHOLD", "EvalScorer", "ScorerEntry", "Threshold", "as_entries"]

INVALID_SCORER_THRESHOLD = "INVALID_SCORER_THRESHOLD"


@dataclass(frozen=True, slots=True)
class Threshold:
    """Passes when the mean score lies within [min, max] (either bound optional).

    `minimum_only` is set for a threshold given as a bare number, which the wire form repeats as
    that number (the reference echoes the threshold as it was declared).
    """

    min: float | None = None
    max: float | None = None
    minimum_only: bool = False

    def passes(self, mean: float) -> bool:
        if not math.isfinite(mean):
            return False
        return (self.min is None or mean >= self.min) and (self.max is None or mean <= self.max)

    def declared(self) -> float | dict[str, float]:
        if self.minimum_only and self.min is not None:
            return self.min
        bounds = {"min": self.min, "max": self.max}
        return {key: value for key, value in bounds.items() if value is not None}


@dataclass(frozen=True, slots=True)
class ScorerEntry:
    """A scorer with an optional threshold: a number (mean >= it) or `{"min":..., "max":...}`."""

    scorer: Scorer
    threshold: float | Threshold | dict[str, float] | None = None

    def resolved_threshold(self) -> Threshold | None:
        value = self.threshold
        if value is None or isinstance(value, Threshold):
            threshold = value
        elif isinstance(value, dict):
            unknown = set(value) - {"min", "max"}
            if unknown:
                raise _threshold_error(self.scorer, f"unknown keys {sorted(unknown)}")
            if value.get("min") is None and value.get("max") is None:
                raise _threshold_error(self.scorer, "give at least one of min and max")
            threshold = Threshold(min=value.get("min"), max=value.get("max"))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            threshold = Threshold(min=value, minimum_only=True)
        else:
            raise _threshold_error(self.scorer, f"expected a number or {{min, max}}, got {value!r}")
        if threshold is not None:
            top = self.scorer.scale
            for bound in (threshold.min, threshold.max):
                if bound is not None and not (
                    isinstance(bound, int | float)
                    and not isinstance(bound, bool)
                    and math.isfinite(bound)
                    and 0 <= bound <= top
                ):
                    raise _threshold_error(self.scorer, f"{bound} is outside [0, {top}]")
            low, high = threshold.min, threshold.max
            if low is not None and high is not None and low > high:
                raise _threshold_error(self.scorer, "min is greater than max")
        return threshold


EvalScorer = Scorer | ScorerEntry | Mapping[str, Any]


def _threshold_error(scorer: Scorer, problem: str) -> ScorewatchError:
    return ScorewatchError(
        f"invalid threshold for scorer {scorer.id!r}: {problem}",
        code=INVALID_SCORER_THRESHOLD,
        details={"scorerId": scorer.id},
    )


def _from_mapping(item: Mapping[str, Any]) -> ScorerEntry:
    unknown = set(item) - {"scorer", "threshold"}
    scorer = item.get("scorer")
    if unknown or not isinstance(scorer, Scorer):
        problem = f"unknown keys {sorted(unknown)}" if unknown else "'scorer' is not a Scorer"
        raise TypeError(f"a scorer entry mapping takes 'scorer' and 'threshold': {problem}")
    return ScorerEntry(scorer, item.get("threshold"))


def as_entries(scorers: Sequence[Any] | None) -> list[tuple[Scorer, Threshold | None]]:
    """Scorers with their thresholds. An entry is a `Scorer`, a `ScorerEntry`, or the reference's
    plain mapping `{"scorer": scorer, "threshold": 0.8}`."""
    entries: list[tuple[Scorer, Threshold | None]] = []
    for item in scorers or ():
        if isinstance(item, Mapping):
            item = _from_mapping(item)
        if isinstance(item, ScorerEntry):
            entries.append((item.scorer, item.resolved_threshold()))
        elif isinstance(item, Scorer):
            entries.append((item, None))
        else:
            raise TypeError(
                "scorers must be Scorer or ScorerEntry objects or {'scorer': ..., "
                f"'threshold': ...}} mappings, got {type(item).__name__}"
            )
    return entries
