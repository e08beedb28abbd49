"""Offline calibration: a scorer's agreement with human-labelled items, and the pass mark on its
scale that best matches the people.

`calibrate` takes the judge's scores and the people's labels item by item (a label is a number
on the scorer's scale or `pass`/`fail`) and returns the agreement (`agreement_by_version`'s
report), the current threshold's kappa, the best threshold's kappa and the worst disagreements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..sinks.labels import LabelledRun
from .agreement import AgreementReport, best_threshold, verdict_agreement, verdicts_at
from .labelled import agreement_by_version

__all__ = ["Calibration", "LabelledItem", "calibrate"]


@dataclass(frozen=True, slots=True)
class LabelledItem:
    """One item of the labelled file: where it is, the person's label, the judge's score."""

    item: str
    """The item's name in reports (its file line)."""
    label: float | str
    """The person's label: a number on the scale, or `pass`/`fail`."""
    judge_score: float
    """The scorer's score of the item."""
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class Calibration:
    report: AgreementReport
    threshold: float
    """The threshold the agreement is computed at (the current one)."""
    kappa_at_threshold: float | None
    """Pass/fail kappa at `threshold`."""
    best_threshold: float | None
    """The cut on the judge's scale with the highest pass/fail kappa."""
    best_kappa: float | None

    @property
    def kappa(self) -> float | None:
        """The pass/fail kappa the gate reads: of the verdict labels when there are any, else
        of the scale labels cut at the threshold."""
        return self.kappa_at_threshold

    @property
    def spearman(self) -> float | None:
        return None if self.report.scale is None else self.report.scale.spearman.value

    def as_dict(self) -> dict[str, Any]:
        gain = None
        if self.best_kappa is not None and self.kappa_at_threshold is not None:
            gain = self.best_kappa - self.kappa_at_threshold
        return {
            **self.report.as_dict(),
            "threshold": self.threshold,
            "kappa_at_threshold": self.kappa_at_threshold,
            "best_threshold": self.best_threshold,
            "best_kappa": self.best_kappa,
            "kappa_gain": gain,
        }


def calibrate(
    scorer: str,
    scorer_version: str | None,
    items: Sequence[LabelledItem],
    *,
    threshold: float,
    scale: float = 1.0,
    higher_passes: bool = True,
) -> Calibration:
    runs = [
        LabelledRun(
            label={
                "id": item.item,
                "runId": item.item,
                "scorerId": scorer,
                "annotator": "file",
                "score": None if isinstance(item.label, str) else float(item.label),
                "verdict": item.label if isinstance(item.label, str) else None,
                "comment": item.comment,
            },
            judge_score=item.judge_score,
            scorer_version=scorer_version,
            target=None,
        )
        for item in items
    ]
    (report,) = agreement_by_version(
        scorer, runs, threshold=threshold, scale=scale, higher_passes=higher_passes
    ) or [AgreementReport(scorer, scorer_version, 0)]
    # The people's pass/fail: their verdicts, or their scores cut at the current threshold.
    human = [
        item.label
        if isinstance(item.label, str)
        else verdicts_at([float(item.label)], threshold, higher_passes=higher_passes)[0]
        for item in items
    ]
    judge = [item.judge_score for item in items]
    current = None
    if report.verdicts is not None and report.scale is None:
        current = report.verdicts.kappa.value
    elif report.scale is not None and report.verdicts is None:
        current = report.scale.at_threshold.kappa.value
    elif items:
        current = verdict_agreement(
            human, verdicts_at(judge, threshold, higher_passes=higher_passes)
        ).kappa.value
    cut, kappa = best_threshold(human, judge, higher_passes=higher_passes)
    return Calibration(report, threshold, current, cut, kappa)
