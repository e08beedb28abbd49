"""Scorers as batch evaluation takes them: bare, or with a pass threshold."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError

__all__ = [
    "INVALID_AGENT_SCORERS",
    "INVALID_SCORER_THRESHOLD",
    "SCORER_KINDS",
    "EvalScorer",
    "EvalScorers",
    "ScorerEntry",
    "ScorerPlan",
    "Threshold",
    "as_entries",
    "plan_scorers",
]

INVALID_SCORER_THRESHOLD = "INVALID_SCORER_THRESHOLD"
INVALID_AGENT_SCORERS = "INVALID_AGENT_SCORERS"
SCORER_KINDS = ("agent", "trajectory")


@dataclass(frozen=True, slots=True)
class Threshold:
    """Passes when the mean score lies within [min, max] (either bound optional).

    `minimum_only` is set for a threshold given as a bare number, which the wire form repeats as
    that number; `given` keeps a mapping as it was declared, members the runner does not read
    included (the reference echoes the threshold as it was declared).
    """

    min: float | None = None
    max: float | None = None
    minimum_only: bool = False
    given: Mapping[str, Any] | None = None

    def passes(self, mean: float) -> bool:
        if not math.isfinite(mean):
            return False
        return (self.min is None or mean >= self.min) and (self.max is None or mean <= self.max)

    def declared(self) -> float | dict[str, Any]:
        if self.minimum_only and self.min is not None:
            return self.min
        if self.given is not None:
            return dict(self.given)
        bounds = {"min": self.min, "max": self.max}
        return {key: value for key, value in bounds.items() if value is not None}


@dataclass(frozen=True, slots=True)
class ScorerEntry:
    """A scorer with an optional threshold: a number (mean >= it) or `{"min":..., "max":...}`.

    A mapping may carry other members: they are not read, only repeated in the threshold result,
    as the reference does. A bound given as None is refused, as there.
    """

    scorer: Scorer
    threshold: float | Threshold | Mapping[str, Any] | None = None

    def resolved_threshold(self) -> Threshold | None:
        value = self.threshold
        if value is None or isinstance(value, Threshold):
            threshold = value
        elif isinstance(value, Mapping):
            if "min" not in value and "max" not in value:
                raise _threshold_error(self.scorer, "give at least one of min and max")
            threshold = Threshold(
                min=_bound(self.scorer, value, "min"),
                max=_bound(self.scorer, value, "max"),
                given=dict(value),
            )
        elif isinstance(value, int | float) and not isinstance(value, bool):
            threshold = Threshold(min=value, minimum_only=True)
        else:
            raise _threshold_error(
                self.scorer, f"expected a number or {{min, max}}, got {_kind(value)}"
            )
        if threshold is not None:
            top = self.scorer.scale
            for bound in (threshold.min, threshold.max):
                if bound is not None and not (
                    isinstance(bound, int | float)
                    and not isinstance(bound, bool)
                    and math.isfinite(bound)
                    and 0 <= bound <= top
                ):
                    raise _threshold_error(self.scorer, f"{bound!r} is outside [0, {top}]")
            low, high = threshold.min, threshold.max
            if low is not None and high is not None and low > high:
                raise _threshold_error(self.scorer, "min is greater than max")
        return threshold


def _bound(scorer: Scorer, value: Mapping[str, Any], key: str) -> Any:
    if key not in value:
        return None
    if value[key] is None:
        raise _threshold_error(scorer, f"{key} is None: give a number or leave {key} out")
    return value[key]


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, list | tuple):
        return "a list"
    return f"{value!r}"


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
    if "threshold" in item and item["threshold"] is None:
        # The reference's `{scorer, threshold: null}` is a refused threshold, not a bare scorer.
        raise _threshold_error(scorer, "expected a number or {min, max}, got None")
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


EvalScorers = Sequence[EvalScorer] | Mapping[str, Sequence[Scorer]]


@dataclass(frozen=True, slots=True)
class ScorerPlan:
    """The scorers of a run grouped as their results are reported: one unnamed group for a list,
    else one group per kind (`agent`, `trajectory`), whose means nest under the kind's name. The
    thresholds are keyed by scorer id, the last one declared for an id winning."""

    groups: tuple[tuple[str | None, tuple[Scorer, ...]], ...]
    thresholds: dict[str, Threshold]

    @property
    def nested(self) -> bool:
        return any(kind is not None for kind, _ in self.groups)

    @property
    def empty(self) -> bool:
        return not any(scorers for _, scorers in self.groups)


def plan_scorers(scorers: EvalScorers | None) -> ScorerPlan:
    """The plan of `scorers`: a list of entries, or the reference's scorer config
    `{"agent": [...], "trajectory": [...]}` (either kind may be left out) of bare scorers."""
    if isinstance(scorers, Mapping):
        unknown = sorted(set(scorers) - set(SCORER_KINDS))
        if unknown or not scorers:
            raise ScorewatchError(
                "scorers must be a list of scorers or a mapping of 'agent' and 'trajectory' "
                f"scorer lists; unknown key(s): {', '.join(map(repr, unknown)) or 'none given'}",
                code=INVALID_AGENT_SCORERS,
            )
        groups = []
        for kind in SCORER_KINDS:
            listed = list(scorers.get(kind) or ())
            wrong = [type(s).__name__ for s in listed if not isinstance(s, Scorer)]
            if wrong:
                raise TypeError(
                    f"the {kind!r} scorers must be Scorer objects (thresholds go on a plain list "
                    f"of scorers), got {', '.join(wrong)}"
                )
            if kind in scorers:
                groups.append((kind, tuple(listed)))
        return ScorerPlan(groups=tuple(groups), thresholds={})
    entries = as_entries(scorers)
    thresholds: dict[str, Threshold] = {}
    for scorer, threshold in entries:
        if threshold is not None:
            thresholds[scorer.id] = threshold
    return ScorerPlan(groups=((None, tuple(s for s, _ in entries)),), thresholds=thresholds)
