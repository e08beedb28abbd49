"""How well a judge agrees with people: agreement statistics between judge scores and labels.

Two kinds of labels, two sets of measures:

- verdicts (`pass`/`fail` or categories): Cohen's kappa, accuracy, the confusion matrix and, for
  pass/fail, the false-pass rate (judge passes what people fail) and false-fail rate;
- scores on the scorer's scale: Spearman's rank correlation, mean absolute error, and the
  pass/fail measures above at the scorer's threshold.

Every measure comes with its number of pairs and a confidence interval. The statistics are
scikit-learn's and SciPy's (imported when first used: `import scorewatch` stays fast):
`cohen_kappa_score`, `accuracy_score`, `confusion_matrix`, `mean_absolute_error`, `spearmanr`;
proportions get Wilson intervals (`binomtest(...).proportion_ci`), kappa the asymptotic interval
of statsmodels' `cohens_kappa`, Spearman and MAE a paired percentile bootstrap
(`scipy.stats.bootstrap`) with a fixed seed, so the same labels give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ._fields import field_values

__all__ = [
    "FAIL",
    "PASS",
    "AgreementReport",
    "Estimate",
    "ScaleAgreement",
    "VerdictAgreement",
    "best_threshold",
    "scale_agreement",
    "verdict_agreement",
    "verdicts_at",
]

PASS: Final = "pass"
FAIL: Final = "fail"
DEFAULT_LEVEL: Final = 0.95
DEFAULT_RESAMPLES: Final = 999
_SEED: Final = 20261202


@dataclass(frozen=True, slots=True)
class Estimate:
    """One measure: its value, its confidence interval at `level`, and how many pairs."""

    value: float | None
    """The measure; None when it is undefined (no pairs, or no variation)."""
    low: float | None
    """Lower end of the confidence interval (None when not computable)."""
    high: float | None
    """Upper end of the confidence interval."""
    n: int
    """Pairs the measure is computed from."""
    level: float = DEFAULT_LEVEL
    """Confidence level of the interval."""

    def as_dict(self) -> dict[str, Any]:
        return field_values(self)


@dataclass(frozen=True, slots=True)
class VerdictAgreement:
    """Agreement of verdicts (pass/fail or categories) between judge and people."""

    kappa: Estimate
    """Cohen's kappa: agreement beyond chance (1 perfect, 0 chance)."""
    accuracy: Estimate
    """Share of pairs where judge and people agree."""
    categories: list[str]
    """Row and column order of `confusion` (sorted)."""
    confusion: list[list[int]]
    """`confusion[i][j]`: pairs people labelled `categories[i]` and the judge `categories[j]`."""
    false_pass: Estimate | None = None
    """Of the runs people failed, the share the judge passed (pass/fail only)."""
    false_fail: Estimate | None = None
    """Of the runs people passed, the share the judge failed (pass/fail only)."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kappa": self.kappa.as_dict(),
            "accuracy": self.accuracy.as_dict(),
            "categories": self.categories,
            "confusion": self.confusion,
        }
        if self.false_pass is not None and self.false_fail is not None:
            out["false_pass_rate"] = self.false_pass.as_dict()
            out["false_fail_rate"] = self.false_fail.as_dict()
        return out


@dataclass(frozen=True, slots=True)
class ScaleAgreement:
    """Agreement of scores on the scorer's scale between judge and people."""

    spearman: Estimate
    """Spearman's rank correlation of judge and human scores."""
    mae: Estimate
    """Mean absolute difference between judge and human scores."""
    threshold: float
    """The pass mark `at_threshold` is computed at."""
    at_threshold: VerdictAgreement
    """Pass/fail agreement with both scores cut at `threshold`."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "spearman": self.spearman.as_dict(),
            "mae": self.mae.as_dict(),
            "threshold": self.threshold,
            "at_threshold": self.at_threshold.as_dict(),
        }


@dataclass(frozen=True, slots=True)
class AgreementReport:
    """The agreement of one scorer (and one scorer version) with its labels."""

    scorer: str
    scorer_version: str | None
    labels: int
    scale: ScaleAgreement | None = None
    verdicts: VerdictAgreement | None = None
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scorer": self.scorer,
            "scorer_version": self.scorer_version,
            "labels": self.labels,
            "scale": None if self.scale is None else self.scale.as_dict(),
            "verdicts": None if self.verdicts is None else self.verdicts.as_dict(),
            "disagreements": self.disagreements,
        }


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _wilson(successes: int, trials: int, level: float) -> Estimate:
    if trials == 0:
        return Estimate(None, None, None, 0, level)
    from scipy.stats import binomtest

    interval = binomtest(successes, trials).proportion_ci(confidence_level=level, method="wilson")
    return Estimate(successes / trials, float(interval.low), float(interval.high), trials, level)


def _bootstrap(
    statistic: Any, samples: tuple[Any, ...], value: float | None, level: float, resamples: int
) -> tuple[float | None, float | None]:
    """A paired percentile bootstrap interval of the vectorized `statistic` (it takes `axis`),
    or (None, None) when the measure is undefined."""
    n = len(samples[0])
    if value is None or n < 3:
        return None, None
    import numpy as np
    from scipy.stats import bootstrap

    with np.errstate(all="ignore"):
        result = bootstrap(
            tuple(np.asarray(sample, dtype=float) for sample in samples),
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=resamples,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(_SEED),
        )
    low, high = result.confidence_interval
    return _finite(low), _finite(high)


def _kappa(human: Sequence[Any], judge: Sequence[Any]) -> float:
    import warnings

    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(human, judge))


def _kappa_interval(
    matrix: list[list[int]], kappa: float | None, level: float
) -> tuple[float | None, float | None]:
    """The asymptotic interval of Cohen's kappa (statsmodels' `cohens_kappa`)."""
    if kappa is None or len(matrix) < 2:
        return None, None
    import warnings

    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = cohens_kappa(np.asarray(matrix))
        # Its sampling distribution (normal, the asymptotic standard error) at any level.
        low, high = result.distribution_kappa.interval(level)
    return _finite(low), _finite(high)


def verdict_agreement(
    human: Sequence[str],
    judge: Sequence[str],
    *,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
) -> VerdictAgreement:
    del resamples  # the verdict measures' intervals are analytic
    """Agreement of the judge's verdicts with the people's, pair by pair."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human verdicts but {len(judge)} judge verdicts")
    from sklearn.metrics import accuracy_score, confusion_matrix

    n = len(human)
    categories = sorted(set(human) | set(judge))
    if n == 0:
        empty = Estimate(None, None, None, 0, level)
        return VerdictAgreement(empty, empty, [], [])
    kappa = _finite(_kappa(human, judge))
    agreed = round(float(accuracy_score(human, judge, normalize=False)))
    matrix = confusion_matrix(human, judge, labels=categories).tolist()
    low, high = _kappa_interval(matrix, kappa, level)
    false_pass = false_fail = None
    if set(categories) <= {PASS, FAIL}:
        failed = [j for h, j in zip(human, judge, strict=True) if h == FAIL]
        passed = [j for h, j in zip(human, judge, strict=True) if h == PASS]
        false_pass = _wilson(failed.count(PASS), len(failed), level)
        false_fail = _wilson(passed.count(FAIL), len(passed), level)
    return VerdictAgreement(
        kappa=Estimate(kappa, low, high, n, level),
        accuracy=_wilson(agreed, n, level),
        categories=categories,
        confusion=[[int(c) for c in row] for row in matrix],
        false_pass=false_pass,
        false_fail=false_fail,
    )


def verdicts_at(
    scores: Sequence[float], threshold: float, *, higher_passes: bool = True
) -> list[str]:
    """Scores cut at `threshold` into pass/fail (`score >= threshold` passes, or `<=` when
    lower is better)."""
    if higher_passes:
        return [PASS if s >= threshold else FAIL for s in scores]
    return [PASS if s <= threshold else FAIL for s in scores]


def _spearman(human: Sequence[float], judge: Sequence[float]) -> float:
    import warnings

    from scipy.stats import spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(human, judge).statistic)


def _mae(human: Sequence[float], judge: Sequence[float]) -> float:
    from sklearn.metrics import mean_absolute_error

    return float(mean_absolute_error(human, judge))


def _spearman_along(human: Any, judge: Any, axis: int = -1) -> Any:
    # Spearman's rho is Pearson's r of the ranks (as scipy's spearmanr computes it); this form
    # takes a batch of resamples at once.
    from scipy.stats import pearsonr, rankdata

    return pearsonr(rankdata(human, axis=axis), rankdata(judge, axis=axis), axis=axis).statistic


def _mae_along(human: Any, judge: Any, axis: int = -1) -> Any:
    import numpy as np

    return np.mean(np.abs(np.subtract(human, judge)), axis=axis)


def scale_agreement(
    human: Sequence[float],
    judge: Sequence[float],
    *,
    threshold: float,
    higher_passes: bool = True,
    level: float = DEFAULT_LEVEL,
    resamples: int = DEFAULT_RESAMPLES,
) -> ScaleAgreement:
    """Agreement of judge scores with human scores on the same scale."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human scores but {len(judge)} judge scores")
    n = len(human)
    pairs = ([float(h) for h in human], [float(j) for j in judge])
    rho = _finite(_spearman(*pairs)) if n >= 2 else None
    mae = _mae(*pairs) if n else None
    rho_low, rho_high = _bootstrap(_spearman_along, pairs, rho, level, resamples)
    mae_low, mae_high = _bootstrap(_mae_along, pairs, mae, level, resamples)
    return ScaleAgreement(
        spearman=Estimate(rho, rho_low, rho_high, n, level),
        mae=Estimate(mae, mae_low, mae_high, n, level),
        threshold=threshold,
        at_threshold=verdict_agreement(
            verdicts_at(pairs[0], threshold, higher_passes=higher_passes),
            verdicts_at(pairs[1], threshold, higher_passes=higher_passes),
            level=level,
            resamples=resamples,
        ),
    )


def best_threshold(
    human_verdicts: Sequence[str], judge_scores: Sequence[float], *, higher_passes: bool = True
) -> tuple[float | None, float | None]:
    """The cut on the judge's scale whose pass/fail best matches the people's (highest Cohen's
    kappa; ties go to the lowest cut), and that kappa. Candidates
    are the judge's own distinct scores: any cut between two of them gives the same verdicts."""
    candidates = sorted(set(float(s) for s in judge_scores))
    best: tuple[float | None, float | None] = (None, None)
    for cut in candidates:
        kappa = _finite(
            _kappa(
                list(human_verdicts), verdicts_at(judge_scores, cut, higher_passes=higher_passes)
            )
        )
        if kappa is not None and (best[1] is None or kappa > best[1] + 1e-12):
            best = (cut, kappa)
    return best
