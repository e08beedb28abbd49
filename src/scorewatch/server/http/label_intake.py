"""Checking labels before they are stored, for `POST /v1/labels` and `scorewatch labels import`
alike: identifiers, scorers, duplicates, verdicts, the runs they name and the scorers' scales.

A verdict is `pass` or `fail`, or, for a scorer that declares `categories` (core/scorer.py), one
of those categories and nothing else: its agreement compares categories, and a pass/fail
beside them would be a second vocabulary no kappa can hold (a rubric-label scorer with the
default choices has `pass` and `fail` as its categories).

`check_labels` returns the `Label`s to store, or raises `LabelsRefused` with the HTTP status,
the error code and every problem (`field`, `message`); nothing is stored then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ...evals.agreement import FAIL, PASS
from ...sinks.labels import Label, RunRef, RunResolver, StoredRun
from ..intake.admission import BAD_ID_MESSAGE, BAD_ID_TEXT
from .label_models import LabelRequest

__all__ = ["LabelsRefused", "allowed_verdicts", "check_labels"]

_ID_FIELDS = ("scorer", "run_id", "target", "trace_id", "span_id", "annotator")


class LabelsRefused(Exception):
    """Labels refused whole: `status` (404 unknown scorer or run, 422 invalid), `code` and
    `problems`, each `{"field": "labels[i].name", "message": ...}`."""

    def __init__(self, status: int, code: str, problems: list[dict[str, str]]) -> None:
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
        if len(problems) > 5:
            summary += f"; and {len(problems) - 5} more"
        super().__init__(summary)
        self.status = status
        self.code = code
        self.problems = problems


Categories = Mapping[str, Mapping[str, float] | None]


def allowed_verdicts(categories: Mapping[str, float] | None) -> list[str]:
    """The verdicts a label of a scorer with these categories (or none) may give."""
    return list(categories) if categories else [PASS, FAIL]


def _check_verdict(index: int, label: LabelRequest, categories: Categories) -> list[dict[str, str]]:
    allowed = allowed_verdicts(categories.get(label.scorer))
    if label.verdict is None or label.verdict in allowed:
        return []
    shown = ", ".join(repr(value) for value in allowed)
    message = f"not a verdict of this scorer; one of {shown}"
    return [{"field": f"labels[{index}].verdict", "message": message}]


def _check_fields(
    scales: Mapping[str, float], labels: Sequence[LabelRequest], categories: Categories
) -> None:
    problems: list[dict[str, str]] = []
    unknown: list[dict[str, str]] = []
    seen: dict[tuple[Any, ...], int] = {}
    for index, label in enumerate(labels):
        for name in _ID_FIELDS:
            value = getattr(label, name)
            if isinstance(value, str) and BAD_ID_TEXT.search(value):
                problems.append({"field": f"labels[{index}].{name}", "message": BAD_ID_MESSAGE})
        if label.comment is not None and BAD_ID_TEXT.search(label.comment):
            problems.append(
                {"field": f"labels[{index}].comment", "message": "holds NUL or lone surrogates"}
            )
        if label.scorer not in scales:
            unknown.append(
                {"field": f"labels[{index}].scorer", "message": "not a configured scorer"}
            )
        else:
            problems += _check_verdict(index, label, categories)
        key = (
            label.scorer,
            label.run_id,
            label.target,
            label.trace_id,
            label.span_id,
            label.annotator,
        )
        if key in seen:
            problems.append(
                {
                    "field": f"labels[{index}]",
                    "message": f"the same run, scorer and annotator as labels[{seen[key]}]",
                }
            )
        seen.setdefault(key, index)
    if problems:
        raise LabelsRefused(422, "invalid_request", problems)
    if unknown:
        raise LabelsRefused(404, "unknown_scorer", unknown)


def _check_runs(
    scales: Mapping[str, float],
    labels: Sequence[LabelRequest],
    runs: Sequence[StoredRun | None],
) -> None:
    missing: list[dict[str, str]] = []
    problems: list[dict[str, str]] = []
    for index, (label, run) in enumerate(zip(labels, runs, strict=True)):
        where = "run_id" if label.run_id is not None else "trace_id"
        if run is None:
            missing.append({"field": f"labels[{index}].{where}", "message": "no such stored run"})
            continue
        if run.scorer_id != label.scorer:
            problems.append(
                {"field": f"labels[{index}].scorer", "message": "the run is another scorer's"}
            )
            continue
        top = scales[label.scorer]
        if label.score is not None and not 0 <= label.score <= top:
            problems.append(
                {"field": f"labels[{index}].score", "message": f"outside the scale 0 to {top:g}"}
            )
    if missing:
        raise LabelsRefused(404, "unknown_run", missing)
    if problems:
        raise LabelsRefused(422, "invalid_request", problems)


async def check_labels(
    labels: Sequence[LabelRequest],
    scales: Mapping[str, float],
    resolver: RunResolver,
    *,
    categories: Categories | None = None,
    now: datetime | None = None,
) -> tuple[list[Label], list[StoredRun]]:
    """The labels to store and the runs they name; `scales` maps each configured scorer to the
    top of its scale, `categories` to its categories (none: pass/fail verdicts). Errors of the
    store itself propagate as they are."""
    _check_fields(scales, labels, categories or {})
    refs = [
        RunRef(label.scorer, label.run_id, label.target, label.trace_id, label.span_id)
        for label in labels
    ]
    runs = await resolver.resolve(refs)
    _check_runs(scales, labels, runs)
    moment = now or datetime.now(UTC)
    built: list[Label] = []
    found: list[StoredRun] = []
    for label, run in zip(labels, runs, strict=True):
        assert run is not None  # _check_runs refused every missing run
        created = label.created_at or moment
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        built.append(
            Label(
                run_id=run.run_id,
                scorer_id=label.scorer,
                annotator=label.annotator,
                score=label.score,
                verdict=label.verdict,
                comment=label.comment,
                created_at=created,
            )
        )
        found.append(run)
    return built, found
