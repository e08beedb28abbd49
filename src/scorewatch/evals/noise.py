"""How much of a score is the judge's noise, and how sure a comparison of two runs can be.

`ScorerNoise` summarizes one scorer's scores when each item was judged several times
(`run_evals(repeat=N)`, `scorewatch eval --repeat N`): the mean, the spread of repeated judgements
of one item (the judge's noise) and the spread of the items' means (how much items differ).

`change_interval` is the confidence interval of a change of mean between two runs. The unit it
resamples is the item: each item's score is the mean of its repeated judgements, so a bootstrap
over items carries both the sampling of items and the judge's noise left in each item's mean.
With the same items in both runs, the items' differences are resampled (a paired bootstrap);
otherwise each run's items are resampled on their own. Without repeats the interval holds item
sampling alone (one judgement per item cannot tell noise from the item).

SciPy does the statistics; it is imported when a comparison or a noise summary is made, not with
`import scorewatch`.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

from ..judge.wire import WireModel
from ._fields import field_values

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "DEFAULT_CONFIDENCE",
    "ChangeInterval",
    "ScorerNoise",
    "change_interval",
    "noise_of",
]

DEFAULT_CONFIDENCE: Final = 0.95
BOOTSTRAP_RESAMPLES: Final = 9999
_BOOTSTRAP_SEED: Final = 20240531
# Above this many items the bootstrap's cost buys nothing over Student's t interval (the mean of
# that many items is as normal as it gets), so the t interval is used.
_BOOTSTRAP_MAX_ITEMS: Final = 2000

Key = TypeVar("Key", bound=Hashable)

IntervalMethod = Literal["paired bootstrap", "bootstrap", "paired t", "t", "exact"]


class ScorerNoise(WireModel):
    """One scorer's scores over items judged `repeats` times.

    `within_item_sd` is the pooled standard deviation of the repeated judgements of one item:
    the judge's noise (None when no item was judged twice). `between_item_sd` is the standard
    deviation of the items' means (None with fewer than two items); it still holds
    `within_item_sd**2 / repeats` of judge noise, which more repeats shrink.
    """

    runs: int
    items: int
    repeats: int
    mean: float
    within_item_sd: float | None = None
    between_item_sd: float | None = None


def noise_of(scores_by_item: Mapping[Key, Sequence[float]]) -> ScorerNoise | None:
    """The noise summary of the scores of each item (None when no item has a score)."""
    import numpy as np

    groups = [np.asarray(scores, dtype=float) for scores in scores_by_item.values() if scores]
    if not groups:
        return None
    means = np.array([group.mean() for group in groups])
    repeated = [group for group in groups if group.size > 1]
    within: float | None = None
    if repeated:
        variances = [group.var(ddof=1) for group in repeated]
        freedom = [group.size - 1 for group in repeated]
        within = float(np.sqrt(np.average(variances, weights=freedom)))
    return ScorerNoise(
        runs=int(sum(group.size for group in groups)),
        items=len(groups),
        repeats=max(group.size for group in groups),
        mean=float(means.mean()),
        within_item_sd=within,
        between_item_sd=float(means.std(ddof=1)) if means.size > 1 else None,
    )


@dataclass(frozen=True, slots=True)
class ChangeInterval:
    """The `confidence` interval [`low`, `high`] of candidate mean - baseline mean (in the
    scores' own units), from `items` items (pairs, when `method` is paired)."""

    low: float
    high: float
    confidence: float
    method: IntervalMethod
    items: int

    def to_dict(self) -> dict[str, Any]:
        return field_values(self)


def change_interval(
    baseline: Mapping[Key, float],
    candidate: Mapping[Key, float],
    confidence: float = DEFAULT_CONFIDENCE,
) -> ChangeInterval | None:
    """The interval of the change of mean from `baseline` to `candidate`, each an item's mean
    score by item key; paired when both runs scored the same items. None when either run has
    fewer than two items (no spread to measure)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    import numpy as np

    if len(baseline) < 2 or len(candidate) < 2:
        return None
    if baseline.keys() == candidate.keys():
        keys = list(baseline)
        differences = np.array([candidate[key] - baseline[key] for key in keys])
        low, high, method = _paired(differences, confidence)
        return ChangeInterval(low, high, confidence, method, len(keys))
    before = np.fromiter(baseline.values(), dtype=float)
    after = np.fromiter(candidate.values(), dtype=float)
    low, high, method = _independent(before, after, confidence)
    return ChangeInterval(low, high, confidence, method, min(before.size, after.size))


def _paired(differences: Any, confidence: float) -> tuple[float, float, IntervalMethod]:
    import numpy as np
    from scipy import stats

    if np.ptp(differences) == 0:  # every item moved alike: nothing to resample
        value = float(differences[0])
        return value, value, "exact"
    if differences.size > _BOOTSTRAP_MAX_ITEMS:
        result = stats.ttest_1samp(differences, 0.0)
        t_interval = result.confidence_interval(confidence_level=confidence)
        return float(t_interval.low), float(t_interval.high), "paired t"
    low, high = _bootstrap((differences,), _mean_of_one, paired=False, confidence=confidence)
    return low, high, "paired bootstrap"


def _independent(before: Any, after: Any, confidence: float) -> tuple[float, float, IntervalMethod]:
    import numpy as np
    from scipy import stats

    if np.ptp(before) == 0 and np.ptp(after) == 0:
        value = float(after[0] - before[0])
        return value, value, "exact"
    if max(before.size, after.size) > _BOOTSTRAP_MAX_ITEMS:
        result = stats.ttest_ind(after, before, equal_var=False)
        t_interval = result.confidence_interval(confidence_level=confidence)
        return float(t_interval.low), float(t_interval.high), "t"
    low, high = _bootstrap((before, after), _difference, paired=False, confidence=confidence)
    return low, high, "bootstrap"


def _mean_of_one(sample: Any, axis: int = -1) -> Any:
    return sample.mean(axis=axis)


def _difference(before: Any, after: Any, axis: int = -1) -> Any:
    return after.mean(axis=axis) - before.mean(axis=axis)


def _bootstrap(
    samples: tuple[Any, ...], statistic: Any, *, paired: bool, confidence: float
) -> tuple[float, float]:
    """SciPy's BCa bootstrap, seeded (a report reads the same twice); the percentile interval
    where BCa has no answer (too few distinct values for its acceleration)."""
    import numpy as np
    from scipy import stats

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DegenerateDataWarning: the percentile one follows
            result = stats.bootstrap(
                samples,
                statistic,
                paired=paired,
                vectorized=True,
                confidence_level=confidence,
                n_resamples=BOOTSTRAP_RESAMPLES,
                batch=1000,
                method=method,
                random_state=np.random.default_rng(_BOOTSTRAP_SEED),
            )
        low, high = result.confidence_interval
        if np.isfinite(low) and np.isfinite(high):
            return float(low), float(high)
    raise ValueError("the bootstrap found no interval")  # pragma: no cover - percentile always does
