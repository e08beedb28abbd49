"""Agreement of a scorer with its stored human labels, per scorer version.

Each label is one pair: the person's label and the judge's stored score of the same run (a run
labelled by three people is three pairs). Labels with a `score` are compared on the scale
(`scale_agreement`); labels with a `verdict` against the judge's score cut at the threshold
(`verdict_agreement`). Runs the judge failed (no score) are left out.

A scorer with `categories` (label -> score, e.g. a rubric-label scorer's choices) is compared
category by category instead: its verdicts are its categories, and the judge's category of a
run is the one whose score equals the stored judge score (core/categories.py), so Cohen's
kappa, accuracy and the confusion matrix are over the categories.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.categories import category_of
from ..sinks.labels import LabelledRun
from .agreement import AgreementReport, scale_agreement, verdict_agreement, verdicts_at

__all__ = ["agreement_by_version", "disagreements"]

_WORST = 10


def disagreements(
    pairs: Sequence[tuple[LabelledRun, float]], limit: int = _WORST
) -> list[dict[str, Any]]:
    """The `limit` pairs where judge and people differ most (`gap`: how far apart, on the scale;
    a verdict counts as 0 or the scale's top)."""
    ranked = sorted(pairs, key=lambda pair: (-pair[1], str(pair[0].label["id"])))
    return [
        {
            "run_id": run.label["runId"],
            "annotator": run.label["annotator"],
            "judge_score": run.judge_score,
            "label_score": run.label["score"],
            "label_verdict": run.label["verdict"],
            "comment": run.label["comment"],
            "gap": gap,
        }
        for run, gap in ranked[:limit]
        if gap > 0
    ]


def _report(
    scorer: str,
    version: str | None,
    runs: Sequence[LabelledRun],
    threshold: float,
    scale: float,
    higher_passes: bool,
    categories: Mapping[str, float] | None,
) -> AgreementReport:
    scored = [r for r in runs if r.label["score"] is not None and r.judge_score is not None]
    judged = [r for r in runs if r.label["verdict"] is not None and r.judge_score is not None]
    gaps: list[tuple[LabelledRun, float]] = []
    scale_result = None
    if scored:
        human = [float(r.label["score"]) for r in scored]
        judge = [float(r.judge_score or 0.0) for r in scored]
        scale_result = scale_agreement(
            human, judge, threshold=threshold, higher_passes=higher_passes
        )
        gaps += [(r, abs(h - j)) for r, h, j in zip(scored, human, judge, strict=True)]
    verdict_result = None
    if judged:
        human_verdicts = [str(r.label["verdict"]) for r in judged]
        judge_scores = [float(r.judge_score or 0.0) for r in judged]
        if categories:
            judge_verdicts = [category_of(score, categories) for score in judge_scores]
            meant = [categories.get(h, 0.0) for h in human_verdicts]
        else:
            judge_verdicts = verdicts_at(judge_scores, threshold, higher_passes=higher_passes)
            meant = [scale if h == "pass" else 0.0 for h in human_verdicts]
        verdict_result = verdict_agreement(human_verdicts, judge_verdicts)
        gaps += [
            (r, 0.0 if h == j else abs(score - m))
            for r, h, j, score, m in zip(
                judged, human_verdicts, judge_verdicts, judge_scores, meant, strict=True
            )
        ]
    return AgreementReport(
        scorer=scorer,
        scorer_version=version,
        labels=len(scored) + len(judged),
        scale=scale_result,
        verdicts=verdict_result,
        disagreements=disagreements(gaps),
    )


def agreement_by_version(
    scorer: str,
    runs: Sequence[LabelledRun],
    *,
    threshold: float,
    scale: float = 1.0,
    higher_passes: bool = True,
    categories: Mapping[str, float] | None = None,
) -> list[AgreementReport]:
    """One report per scorer version the labelled runs were scored by (newest label last);
    with `categories`, verdicts are compared as categories (see the module docstring)."""
    by_version: dict[str | None, list[LabelledRun]] = defaultdict(list)
    for run in runs:
        by_version[run.scorer_version].append(run)
    return [
        _report(scorer, version, group, threshold, scale, higher_passes, categories)
        for version, group in by_version.items()
    ]
