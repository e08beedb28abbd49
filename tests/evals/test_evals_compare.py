"""Run-to-run comparison (`scorewatch.evals.compare`): matching, direction, the CI gate."""

from __future__ import annotations

from typing import Any

import pytest

from scorewatch.evals.compare import compare_records

pytestmark = pytest.mark.unit


def rec(item: int, scorer: str, score: float | None, **extra: Any) -> dict[str, Any]:
    return {
        "item": item,
        "scorer_id": scorer,
        "input": f"q{item}",
        "score": score,
        "error": None if score is not None else "Scorer Run Failed: boom",
        **extra,
    }


def test_mean_deltas_and_item_changes() -> None:
    baseline = [rec(0, "s", 0.8), rec(1, "s", 0.6), rec(2, "s", 0.5), rec(3, "s", 0.9)]
    candidate = [rec(0, "s", 0.8), rec(1, "s", 0.2), rec(2, "s", 0.7), rec(3, "s", None)]
    comparison = compare_records(baseline, candidate)
    delta = comparison.scorers["s"]
    assert delta.baseline_mean == pytest.approx(0.7)
    assert delta.candidate_mean == pytest.approx(1.7 / 3)  # each run's own mean: failures out
    assert delta.delta == pytest.approx(1.7 / 3 - 0.7)
    assert (delta.regressed, delta.improved, delta.newly_failed) == (2, 1, 1)
    # Newly failed first, then the largest drop.
    assert [(c.item, c.candidate_error) for c in comparison.regressed] == [
        (3, "Scorer Run Failed: boom"),
        (1, None),
    ]
    assert comparison.regressed[1].change == pytest.approx(-0.4)
    assert [c.item for c in comparison.improved] == [2]
    # Three scored items, one worse, one better: the interval of the change reaches far past
    # the allowed drop on both sides, so the drop is not a failure, and the report says why.
    assert comparison.problems() == []
    (note,) = comparison.within_noise()
    assert note.startswith("within the noise: s mean 0.700 -> 0.567 (13.3% of its scale worse)")


def test_items_match_by_input_not_position() -> None:
    baseline = [rec(0, "s", 1.0), rec(1, "s", 0.0)]
    # The dataset was reordered and an item added: same scores for the same inputs.
    candidate = [
        {**rec(0, "s", 0.0), "input": "q1"},
        {**rec(1, "s", 1.0), "input": "q0"},
        {**rec(2, "s", 0.5), "input": "new"},
    ]
    comparison = compare_records(baseline, candidate)
    assert comparison.regressed == [] and comparison.improved == []
    assert (comparison.only_in_baseline, comparison.only_in_candidate) == (0, 1)


def test_lower_is_better_and_scale() -> None:
    toxic = {"direction": "lower_is_better", "scale": 10}
    baseline = [rec(0, "tox", 1.0, **toxic), rec(1, "tox", 2.0, **toxic)]
    candidate = [rec(0, "tox", 3.0, **toxic), rec(1, "tox", 1.0, **toxic)]
    comparison = compare_records(baseline, candidate)
    assert [c.item for c in comparison.regressed] == [0]  # a rise of toxicity is worse
    assert comparison.regressed[0].change == pytest.approx(-0.2)  # 2 points of a 0-10 scale
    assert [c.item for c in comparison.improved] == [1]
    assert comparison.scorers["tox"].change == pytest.approx(-0.05)
    ends = comparison.scorers["tox"].change_interval
    assert ends is not None and ends[0] < -0.05 < ends[1]
    # Every item 2 points more toxic: the interval is exact, and beyond 1% of the scale.
    worse = [rec(i, "tox", 1.0 + 2.0, **toxic) for i in range(2)]
    same = [rec(i, "tox", 1.0, **toxic) for i in range(2)]
    assert compare_records(same, worse, max_drop=0.19).problems() == [
        "regression: tox mean 1.000 -> 3.000 (20.0% of its scale worse; 95% interval of the "
        "change [-20.0%, -20.0%], all beyond the allowed -19.0%)"
    ]
    assert compare_records(same, worse, max_drop=0.2).passed


def test_a_scorer_without_scores_in_the_candidate_fails_the_gate() -> None:
    comparison = compare_records([rec(0, "s", 1.0)], [rec(0, "s", None)])
    assert comparison.problems() == ["regression: s has no score in the candidate run"]


def test_a_not_scorable_item_is_neither_regressed_nor_failed() -> None:
    skipped = {**rec(1, "s", None), "error": None, "not_scorable": {"step": "preprocess"}}
    comparison = compare_records([rec(0, "s", 0.5), rec(1, "s", 0.5)], [rec(0, "s", 0.5), skipped])
    assert comparison.regressed == [] and comparison.scorers["s"].newly_failed == 0
    assert comparison.passed
