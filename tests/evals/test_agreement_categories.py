"""Categorical labels (issue 32): a scorer declares its categories (label -> score), the judge's
category of a run is read back from its stored score, and agreement compares categories."""

from __future__ import annotations

from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

import scorewatch as sw
from scorewatch.core.categories import category_of
from scorewatch.errors import ScorewatchError
from scorewatch.evals.labelled import agreement_by_version
from scorewatch.scorers.rubric_label import create_rubric_label_scorer
from scorewatch.sinks.labels import LabelledRun
from scorewatch.testing import LoopbackJudgeServer

pytestmark = pytest.mark.unit

CATEGORIES = {"good": 1.0, "ok": 0.5, "bad": 0.0}


def test_the_judge_category_is_the_one_of_its_stored_score() -> None:
    assert category_of(1.0, CATEGORIES) == "good"
    assert category_of(0.5, CATEGORIES) == "ok"
    assert category_of(0.0, CATEGORIES) == "bad"
    # A score that went through a store's float round trip still names its category.
    assert category_of(0.1 + 0.4, CATEGORIES) == "ok"
    # A score of no category (another definition's) stays visible, never a silent match.
    assert category_of(0.7, CATEGORIES) == "score 0.7"


def _run(index: int, verdict: str, judge_score: float) -> LabelledRun:
    label: dict[str, Any] = {
        "id": f"label-{index}",
        "runId": f"run-{index}",
        "annotator": "ana",
        "score": None,
        "verdict": verdict,
        "comment": None,
    }
    return LabelledRun(label=label, judge_score=judge_score, scorer_version="v1", target="bot")


def test_agreement_over_categories_equals_scikit_learn() -> None:
    people = ["good", "ok", "bad", "ok", "good", "bad", "bad", "ok", "good", "ok"]
    judge = ["good", "ok", "ok", "bad", "good", "bad", "good", "ok", "ok", "ok"]
    runs = [_run(i, p, CATEGORIES[j]) for i, (p, j) in enumerate(zip(people, judge, strict=True))]
    (report,) = agreement_by_version("tone", runs, threshold=0.5, scale=1.0, categories=CATEGORIES)
    assert report.verdicts is not None
    assert report.verdicts.kappa.value == pytest.approx(cohen_kappa_score(people, judge), 1e-9)
    order = sorted(CATEGORIES)
    assert report.verdicts.confusion == confusion_matrix(people, judge, labels=order).tolist()
    assert report.verdicts.false_pass is None  # not pass/fail
    # Without the categories the same labels would be read as pass/fail: not what was meant.
    (plain,) = agreement_by_version("tone", runs, threshold=0.5, scale=1.0)
    assert plain.verdicts is not None and plain.verdicts.categories != order


def test_a_scorer_declares_categories_once_per_score() -> None:
    scorer = sw.create_scorer(id="tone", categories=CATEGORIES).generate_score(lambda ctx: 1.0)
    assert dict(scorer.categories or {}) == CATEGORIES
    assert dict(scorer.copy(id="tone-2").categories or {}) == CATEGORIES
    with pytest.raises(TypeError):
        scorer.categories["great"] = 2.0  # type: ignore[index]
    # Categories label scores; they do not decide them: the version is the same without.
    bare = sw.create_scorer(id="tone").generate_score(lambda ctx: 1.0)
    assert bare.categories is None
    assert bare.version_fingerprint == scorer.version_fingerprint
    with pytest.raises(ScorewatchError, match="share a score"):
        sw.create_scorer(id="tone", categories={"good": 1, "fine": 1.0, "bad": 0})
    with pytest.raises(ScorewatchError, match="finite"):
        sw.create_scorer(id="tone", categories={"good": float("nan"), "bad": 0})


def test_the_rubric_label_choices_are_its_categories_when_each_has_its_score() -> None:
    with LoopbackJudgeServer() as judge:
        options = {"api_base": judge.base_url, "api_key": "sk-test"}
        scorer = create_rubric_label_scorer(
            "openai/loopback", rubric="r", choices=CATEGORIES, model_options=options
        )
        assert dict(scorer.categories or {}) == CATEGORIES
        shared = create_rubric_label_scorer(
            "openai/loopback",
            rubric="r",
            choices={"great": 1, "good": 1, "bad": 0},
            model_options=options,
        )
        assert shared.categories is None
