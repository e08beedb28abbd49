"""Judge/human agreement statistics: equal to the libraries' own computations, and intervals that
cover the population value at their stated rate over many seeds of synthetic labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, bootstrap, spearmanr
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    mean_absolute_error,
)
from statsmodels.stats.inter_rater import cohens_kappa

from scorewatch.evals import agreement
from scorewatch.evals.agreement import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    FAIL,
    PASS,
    best_threshold,
    scale_agreement,
    verdict_agreement,
    verdicts_at,
)

pytestmark = pytest.mark.unit


def _flip(verdict: str) -> str:
    return PASS if verdict == FAIL else FAIL


def _verdicts(seed: int, n: int, pass_rate: float, error: float) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    human = [PASS if x else FAIL for x in rng.random(n) < pass_rate]
    flips = rng.random(n) < error
    judge = [_flip(h) if f else h for h, f in zip(human, flips, strict=True)]
    return human, judge


def _true_kappa(pass_rate: float, error: float) -> float:
    # Population kappa of a judge that flips each human verdict with probability `error`.
    judge_pass = pass_rate * (1 - error) + (1 - pass_rate) * error
    chance = pass_rate * judge_pass + (1 - pass_rate) * (1 - judge_pass)
    return ((1 - error) - chance) / (1 - chance)


def test_verdict_measures_equal_the_libraries() -> None:
    human, judge = _verdicts(7, 300, 0.6, 0.2)
    result = verdict_agreement(human, judge)
    assert result.kappa.value == pytest.approx(cohen_kappa_score(human, judge), abs=1e-9)
    assert result.accuracy.value == pytest.approx(accuracy_score(human, judge), abs=1e-9)
    matrix = confusion_matrix(human, judge, labels=[FAIL, PASS])
    assert result.categories == [FAIL, PASS]
    assert result.confusion == matrix.tolist()
    reference = cohens_kappa(matrix)
    assert result.kappa.low == pytest.approx(reference.kappa_low, abs=1e-9)
    assert result.kappa.high == pytest.approx(reference.kappa_upp, abs=1e-9)
    agreed = int(np.trace(matrix))
    wilson = binomtest(agreed, 300).proportion_ci(method="wilson")
    assert (result.accuracy.low, result.accuracy.high) == pytest.approx(
        (wilson.low, wilson.high), abs=1e-9
    )
    # False pass: of the runs people failed, those the judge passed (row fail, column pass).
    assert result.false_pass is not None and result.false_fail is not None
    assert result.false_pass.value == pytest.approx(matrix[0, 1] / matrix[0].sum(), abs=1e-9)
    assert result.false_fail.value == pytest.approx(matrix[1, 0] / matrix[1].sum(), abs=1e-9)
    assert result.false_pass.n == int(matrix[0].sum())
    assert result.kappa.n == result.accuracy.n == 300


def test_categories_other_than_pass_fail_have_no_false_rates() -> None:
    human = ["good", "bad", "ok", "good", "ok", "bad", "good"]
    judge = ["good", "ok", "ok", "good", "bad", "bad", "ok"]
    result = verdict_agreement(human, judge)
    assert result.categories == ["bad", "good", "ok"]
    assert result.kappa.value == pytest.approx(cohen_kappa_score(human, judge), abs=1e-9)
    assert result.false_pass is None and result.false_fail is None
    assert "false_pass_rate" not in result.as_dict()


def test_scale_measures_equal_the_libraries() -> None:
    rng = np.random.default_rng(3)
    human = rng.random(250)
    judge = np.clip(human + rng.normal(0, 0.15, 250), 0, 1)
    result = scale_agreement(list(human), list(judge), threshold=0.5)
    assert result.spearman.value == pytest.approx(spearmanr(human, judge).statistic, abs=1e-9)
    assert result.mae.value == pytest.approx(mean_absolute_error(human, judge), abs=1e-9)
    cut_h = verdicts_at(list(human), 0.5)
    cut_j = verdicts_at(list(judge), 0.5)
    assert result.at_threshold.kappa.value == pytest.approx(
        cohen_kappa_score(cut_h, cut_j), abs=1e-9
    )
    assert result.spearman.low is not None and result.spearman.high is not None
    assert result.spearman.low < result.spearman.value < result.spearman.high
    # The same labels give the same intervals (the bootstrap's seed is fixed).
    again = scale_agreement(list(human), list(judge), threshold=0.5)
    assert again.spearman == result.spearman and again.mae == result.mae


def test_scale_intervals_equal_scipys_bootstrap_of_the_library_statistics() -> None:
    """The Spearman and MAE intervals are SciPy's paired percentile bootstrap of SciPy's
    `spearmanr` and scikit-learn's `mean_absolute_error` themselves, drawn with the same seed:
    the batched forms the module uses give the same numbers."""
    rng = np.random.default_rng(11)
    human = rng.random(80)
    judge = np.clip(human + rng.normal(0, 0.2, 80), 0, 1)
    result = scale_agreement(list(human), list(judge), threshold=0.5)

    def reference(statistic: object) -> tuple[float, float]:
        interval = bootstrap(
            (human, judge),
            statistic,
            paired=True,
            vectorized=False,
            n_resamples=DEFAULT_RESAMPLES,
            confidence_level=DEFAULT_LEVEL,
            method="percentile",
            rng=np.random.default_rng(agreement._SEED),
        ).confidence_interval
        return float(interval.low), float(interval.high)

    rho = reference(lambda h, j: spearmanr(h, j).statistic)
    mae = reference(lambda h, j: mean_absolute_error(h, j))
    assert (result.spearman.low, result.spearman.high) == pytest.approx(rho, abs=1e-9)
    assert (result.mae.low, result.mae.high) == pytest.approx(mae, abs=1e-9)


def test_undefined_measures_are_none_not_numbers() -> None:
    empty = verdict_agreement([], [])
    assert empty.kappa.value is None and empty.kappa.n == 0
    constant = scale_agreement([0.5, 0.5, 0.5], [0.1, 0.2, 0.3], threshold=0.5)
    assert constant.spearman.value is None  # no variation in the human scores
    assert constant.mae.value == pytest.approx(0.3)
    with pytest.raises(ValueError, match="2 human verdicts but 1"):
        verdict_agreement([PASS, FAIL], [PASS])


def test_lower_is_better_scales_pass_below_the_threshold() -> None:
    assert verdicts_at([0.1, 0.9], 0.5, higher_passes=False) == [PASS, FAIL]


def test_best_threshold_finds_the_cut_people_agree_with() -> None:
    rng = np.random.default_rng(11)
    truth = rng.random(400)
    human = verdicts_at(list(truth), 0.7)
    judge = list(truth + rng.normal(0, 0.02, 400))
    cut, kappa = best_threshold(human, judge)
    assert cut is not None and kappa is not None
    assert abs(cut - 0.7) < 0.05
    assert kappa > cohen_kappa_score(human, verdicts_at(judge, 0.5))


COVERAGE_SEEDS = 300


def _covered(low: float | None, high: float | None, truth: float) -> bool:
    return low is not None and high is not None and low <= truth <= high


def _assert_rate(hits: int, level: float = 0.95) -> None:
    # Coverage within what 300 seeds allow around the nominal rate (a two-sided 99.9% band).
    band = binomtest(round(level * COVERAGE_SEEDS), COVERAGE_SEEDS).proportion_ci(0.999)
    assert band.low <= hits / COVERAGE_SEEDS <= band.high, f"coverage {hits}/{COVERAGE_SEEDS}"


def test_verdict_intervals_cover_the_truth_at_their_rate() -> None:
    pass_rate, error = 0.55, 0.15
    kappa_truth = _true_kappa(pass_rate, error)
    kappa_hits = accuracy_hits = false_pass_hits = 0
    for seed in range(COVERAGE_SEEDS):
        human, judge = _verdicts(seed, 300, pass_rate, error)
        result = verdict_agreement(human, judge)
        kappa_hits += _covered(result.kappa.low, result.kappa.high, kappa_truth)
        accuracy_hits += _covered(result.accuracy.low, result.accuracy.high, 1 - error)
        assert result.false_pass is not None
        false_pass_hits += _covered(result.false_pass.low, result.false_pass.high, error)
    _assert_rate(kappa_hits)
    _assert_rate(accuracy_hits)
    _assert_rate(false_pass_hits)


def test_scale_intervals_cover_the_truth_at_their_rate() -> None:
    rho, sigma = 0.6, 1.0
    # Population Spearman of a bivariate normal with correlation rho (Pearson 1907).
    spearman_truth = 6 / math.pi * math.asin(rho / 2)
    spearman_hits = mae_hits = 0
    for seed in range(COVERAGE_SEEDS):
        rng = np.random.default_rng(10_000 + seed)
        human = rng.normal(0, sigma, 200)
        judge = rho * human + math.sqrt(1 - rho**2) * rng.normal(0, sigma, 200)
        result = scale_agreement(list(human), list(judge), threshold=0.0, resamples=999)
        spearman_hits += _covered(result.spearman.low, result.spearman.high, spearman_truth)
        # judge - human is normal with variance 2(1 - rho) sigma^2; E|X| = sd * sqrt(2/pi).
        mae_truth = math.sqrt(2 * (1 - rho)) * sigma * math.sqrt(2 / math.pi)
        mae_hits += _covered(result.mae.low, result.mae.high, mae_truth)
    _assert_rate(spearman_hits)
    _assert_rate(mae_hits)
