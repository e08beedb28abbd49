"""Scorers as batch evaluation takes them: bare, or with a pass threshold."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError

__all__ = ["INVALID_SCORER_THRESHOLD", "EvalScorer", "ScorerEntry", "Threshold", "as_entries"]

INVALID_SCORER_THRESHOLD = "INVALID_SCORER_THRESHOLD"


@dataclass(frozen=True, slots=True)
class Threshold:
    """Passes when the mean score lies within [min, max] (either bound optional)."""

    min: float | None = None
    max: float | None = None

    def passes(self, mean: float) -> bool:
        return (self.min is None or mean >= self.min) and (self.max is None or mean <= self.max)


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
            threshold = Threshold(min=value.get("min"), max=value.get("max"))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            threshold = Threshold(min=float(value))
        else:
            raise _threshold_error(self.scorer, f"expected a number or {{min, max}}, got {value!r}")
        if threshold is not None:
            top = self.scorer.scale
            for bound in (threshold.min, threshold.max):
                if bound is not None and not 0 <= bound <= top:
                    raise _threshold_error(self.scorer, f"{bound} is outside [0, {top}]")
            low, high = threshold.min, threshold.max
            if low is not None and high is not None and low > high:
                raise _threshold_error(self.scorer, "min is greater than max")
        return threshold


EvalScorer = Scorer | ScorerEntry


def _threshold_error(scorer: Scorer, problem: str) -> ScorewatchError:
    return ScorewatchError(
        f"invalid threshold for scorer {scorer.id!r}: {problem}",
        code=INVALID_SCORER_THRESHOLD,
        details={"scorerId": scorer.id},
    )


def as_entries(scorers: Sequence[Any] | None) -> list[tuple[Scorer, Threshold | None]]:
    entries: list[tuple[Scorer, Threshold | None]] = []
    for item in scorers or ():
        if isinstance(item, ScorerEntry):
            entries.append((item.scorer, item.resolved_threshold()))
        elif isinstance(item, Scorer):
            entries.append((item, None))
        else:
            raise TypeError(
                f"scorers must be Scorer or ScorerEntry objects, got {type(item).__name__}"
            )
    return entries
