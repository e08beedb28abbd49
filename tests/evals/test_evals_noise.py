"""Judge noise and noise-aware comparisons: the statistics (`evals.noise`), repeated judging in
`run_evals` and `run_experiment`, and the version check of `compare_records`."""

from __future__ import annotations

from typing import Any

import pytest

import scorewatch as sw
from noise_support import items_of_quality, noisy_judge, noisy_scorer
from scorewatch.evals.compare import SCORER_CHANGED, compare_records
from scorewatch.evals.noise import change_interval, noise_of

pytestmark = pytest.mark.unit


def test_noise_of_separates_judge_noise_from_item_spread() -> None:
    noise = noise_of({"a": [0.2, 0.4], "b": [0.6, 0.8], "c": [1.0]})
    assert noise is not None
    assert (noise.runs, noise.items, noise.repeats) == (5, 3, 2)
    assert noise.mean == pytest.approx((0.3 + 0.7 + 1.0) / 3)
    # Two items judged twice, each 0.2 apart: pooled variance 0.02, one degree of freedom each.
    assert noise.within_item_sd == pytest.approx(0.02**0.5)
    assert noise.between_item_sd == pytest.approx(0.3511884584, rel=1e-6)
    single = noise_of({"a": [0.5], "b": [0.7]})
    assert single is not None and single.within_item_sd is None
    assert noise_of({"a": []}) is None


def test_change_interval_is_paired_on_the_same_items() -> None:
    before = {i: 0.5 + 0.05 * (i % 5) for i in range(30)}
    after = {i: value - 0.1 + 0.01 * ((i * 7) % 3 - 1) for i, value in before.items()}
    paired = change_interval(before, after)
    assert paired is not None and paired.method == "paired bootstrap" and paired.items == 30
    assert paired.low < -0.1 < paired.high and paired.high - paired.low < 0.02
    # Without pairing the items' own spread (0.07) enters the interval: much wider.
    shifted = {i + 100: value for i, value in after.items()}
    independent = change_interval(before, shifted)
    assert independent is not None and independent.method == "bootstrap"
    assert independent.high - independent.low > 5 * (paired.high - paired.low)
    assert change_interval(before, before).method == "exact"  # type: ignore[union-attr]
    assert change_interval({0: 1.0}, {0: 0.0}) is None
    # The same seed, the same interval: a report reads the same twice.
    assert change_interval(before, after) == paired


def test_change_interval_widens_with_confidence() -> None:
    before = {i: 0.1 * (i % 7) for i in range(25)}
    after = {i: v + 0.05 * ((i * 3) % 4 - 1.5) for i, v in before.items()}
    narrow, wide = change_interval(before, after, 0.8), change_interval(before, after, 0.99)
    assert narrow is not None and wide is not None
    assert wide.low < narrow.low < narrow.high < wide.high


def _record(item: int, score: float, version: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "item": item,
        "scorer_id": "judge",
        "input": f"q{item}",
        "score": score,
        "error": None,
        "scorer_version": version,
        **extra,
    }


def test_compare_refuses_a_changed_scorer_version_unless_allowed() -> None:
    baseline = [_record(i, 0.8, "aaaaaaaaaaaa") for i in range(5)]
    candidate = [_record(i, 0.6, "bbbbbbbbbbbb") for i in range(5)]
    with pytest.raises(sw.ScorewatchError) as refused:
        compare_records(baseline, candidate)
    assert refused.value.code == SCORER_CHANGED
    assert refused.value.message.startswith(
        "scorer 'judge' changed version: aaaaaaaaaaaa (baseline) -> bbbbbbbbbbbb"
    )
    allowed = compare_records(baseline, candidate, allow_scorer_change=True)
    assert [c.scorer_id for c in allowed.changed_scorers] == ["judge"]
    assert not allowed.passed  # compared as asked: every item 0.2 worse
    # Records written before versions were kept: compared, with the versions unchecked.
    old = [{**r, "scorer_version": None} for r in baseline]
    assert compare_records(old, candidate).unversioned == ["judge"]


def test_repeats_of_an_item_count_as_its_mean() -> None:
    baseline = [_record(i, 0.5, "v", repeat=k) for i in range(4) for k in range(3)]
    candidate = [
        _record(i, score, "v", repeat=k)
        for i in range(4)
        for k, score in enumerate((0.4, 0.5, 0.6))
    ]
    comparison = compare_records(baseline, candidate)
    delta = comparison.scorers["judge"]
    assert (delta.baseline_runs, delta.candidate_runs) == (12, 12)
    assert delta.delta == pytest.approx(0.0)
    assert comparison.only_in_candidate == 0 and comparison.regressed == []
    assert delta.interval is not None and delta.interval.method == "exact"


async def test_run_evals_repeats_judged_scorers_only() -> None:
    data = items_of_quality(12, seed=1)
    judge = noisy_judge(0.1, seed=5)
    length = sw.create_scorer(id="length", description="d").generate_score(
        lambda ctx: len(str(ctx.run.output)) / 100
    )
    seen: list[sw.evals.ItemComplete] = []
    result = await sw.run_evals(
        data=data, scorers=[noisy_scorer(judge), length], repeat=4, on_item_complete=seen.append
    )
    assert judge.calls == 12 * 4
    assert result.noise is not None and set(result.noise) == {"noisy"}
    noise = result.noise["noisy"]
    assert (noise.items, noise.repeats, noise.runs) == (12, 4, 48)
    assert noise.within_item_sd is not None and 0.05 < noise.within_item_sd < 0.15
    assert all(len(done.repeated_results["noisy"]) == 4 for done in seen)
    assert "length" not in seen[0].repeated_results
    assert "noise" in result.model_dump(mode="json", by_alias=True)
    plain = await sw.run_evals(data=data, scorers=[length])
    assert "noise" not in plain.model_dump(mode="json", by_alias=True)  # the reference's form


async def test_run_experiment_repeats_and_keeps_every_run() -> None:
    data = items_of_quality(6, seed=2)
    judge = noisy_judge(0.1, seed=9)
    outcomes: list[sw.evals.RunOutcome] = []
    result = await sw.run_experiment(
        data=data, scorers=[noisy_scorer(judge)], repeat=3, on_result=outcomes.append
    )
    assert sorted((o.item_index, o.repeat) for o in outcomes) == [
        (i, k) for i in range(6) for k in range(3)
    ]
    assert all(len(item.repeats["noisy"]) == 3 for item in result.items)
    assert result.noise is not None and result.noise["noisy"].runs == 18
    item_means = [sum(r.score or 0.0 for r in item.repeats["noisy"]) / 3 for item in result.items]
    assert result.scores["noisy"] == pytest.approx(sum(item_means) / 6)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
async def test_repeat_must_be_a_whole_number(bad: Any) -> None:
    with pytest.raises(sw.ScorewatchError, match="repeat must be a whole number"):
        await sw.run_evals(
            data=[{"output": "x"}], scorers=[noisy_scorer(noisy_judge(0.1, 0))], repeat=bad
        )
