"""`scorewatch calibrate` on human-labelled items: the agreement equals the libraries' on the
scorer's own scores, the best threshold is found, the HTML section is written, and the gates
exit 1 below their floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import spearmanr
from sklearn.metrics import accuracy_score, cohen_kappa_score, mean_absolute_error

from cli_support import ROOT, scorewatch, write_jsonl
from scorewatch.scorers import registry

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "docs" / "examples" / "labelled-answers.jsonl"


def _rows() -> list[dict[str, object]]:
    return [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]


def _judge_scores(rows: list[dict[str, object]]) -> list[float]:
    scorer = registry.build_scorer("keyword-coverage")
    return [
        float(scorer.run_sync(input=row["input"], output=row["output"]).score or 0.0)
        for row in rows
    ]


def test_the_shipped_example_agrees_as_the_libraries_say(tmp_path: Path) -> None:
    rows = _rows()
    judge = ["pass" if s >= 0.5 else "fail" for s in _judge_scores(rows)]
    human = [str(row["label"]) for row in rows]
    page = tmp_path / "calibration.html"
    done = scorewatch(
        "calibrate",
        str(EXAMPLE),
        "--scorer",
        "keyword-coverage",
        "--format",
        "json",
        "--html",
        str(page),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    verdicts = report["verdicts"]
    assert verdicts["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judge), abs=1e-9)
    assert verdicts["accuracy"]["value"] == pytest.approx(accuracy_score(human, judge), abs=1e-9)
    assert verdicts["kappa"]["n"] == len(rows)
    assert report["failed"] == []
    assert report["disagreements"], "the example holds items the judge gets wrong"
    assert "id='calibration'" in page.read_text(encoding="utf-8")
    gated = scorewatch(
        "calibrate", str(EXAMPLE), "--scorer", "keyword-coverage", "--min-kappa", "0.95"
    )
    assert gated.returncode == 1
    assert "below the gate: kappa" in gated.stderr


def test_scale_labels_and_the_best_threshold(tmp_path: Path) -> None:
    rows = _rows()
    scores = _judge_scores(rows)
    # People who pass only what the judge scores at 0.6 or more: the best cut is the lowest
    # judge score at or above 0.6, with perfect agreement, better than the default 0.5.
    cut = min(s for s in scores if s >= 0.6)
    assert any(0.5 <= s < 0.6 for s in scores), "the example needs scores between 0.5 and 0.6"
    passing = write_jsonl(
        tmp_path / "passing.jsonl",
        [
            {**row, "label": "pass" if s >= 0.6 else "fail"}
            for row, s in zip(rows, scores, strict=True)
        ],
    )
    done = scorewatch("calibrate", str(passing), "--scorer", "keyword-coverage", "--format", "json")
    report = json.loads(done.stdout)
    assert report["best_threshold"] == pytest.approx(cut)
    assert report["best_kappa"] == pytest.approx(1.0)
    assert report["kappa_gain"] > 0
    # Labels on the scale: Spearman and MAE as SciPy and scikit-learn compute them.
    human = [round(min(1.0, s + (0.2 if i % 3 else -0.1)), 3) for i, s in enumerate(scores)]
    human = [max(0.0, h) for h in human]
    scaled = write_jsonl(
        tmp_path / "scaled.jsonl",
        [{**row, "label": h} for row, h in zip(rows, human, strict=True)],
    )
    done = scorewatch(
        "calibrate",
        str(scaled),
        "--scorer",
        "keyword-coverage",
        "--format",
        "json",
        "--min-spearman",
        "0.5",
    )
    assert done.returncode == 0, done.stderr
    scale = json.loads(done.stdout)["scale"]
    assert scale["spearman"]["value"] == pytest.approx(spearmanr(human, scores).statistic, 1e-9)
    assert scale["mae"]["value"] == pytest.approx(mean_absolute_error(human, scores), abs=1e-9)
    gated = scorewatch(
        "calibrate", str(scaled), "--scorer", "keyword-coverage", "--min-spearman", "0.999"
    )
    assert gated.returncode == 1


def test_a_bad_label_is_named_by_its_line(tmp_path: Path) -> None:
    rows = _rows()[:3]
    rows[2] = {**rows[2], "label": "maybe"}
    done = scorewatch(
        "calibrate", str(write_jsonl(tmp_path / "bad.jsonl", rows)), "--scorer", "keyword-coverage"
    )
    assert done.returncode == 2
    assert "bad.jsonl:3: 'label' must be" in done.stderr
