"""Request and response bodies of `POST /v1/labels` and `GET /v1/agreement`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..intake.admission import MAX_TARGET_CHARS

__all__ = [
    "MAX_COMMENT_CHARS",
    "MAX_LABELS",
    "MAX_VERDICT_CHARS",
    "LabelBatch",
    "LabelRequest",
    "LabelsStored",
]

MAX_LABELS = 500
"""Labels in one request."""
MAX_COMMENT_CHARS = 4000
"""Characters of one label's comment."""
MAX_VERDICT_CHARS = 128
"""Characters of one verdict (`pass`, `fail` or one of the scorer's categories)."""

_EXAMPLE: dict[str, Any] = {
    "scorer": "summary",
    "run_id": "summary-4bf92f3577b34da6-00f067aa0ba902b7-1a2b3c",
    "annotator": "ana@example.com",
    "verdict": "fail",
    "comment": "Leaves out the city.",
}


class LabelRequest(BaseModel):
    """One person's verdict on one stored run: a `score` on the scorer's scale or a `verdict`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_EXAMPLE]})

    scorer: str = Field(min_length=1, max_length=64, description="The scorer whose run this is.")
    run_id: str | None = Field(
        None, min_length=1, max_length=512, description="The run (the `id` of its score row)."
    )
    target: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_TARGET_CHARS,
        description="With `trace_id` and `span_id`, names the run instead of `run_id`.",
    )
    trace_id: str | None = Field(None, min_length=1, max_length=128)
    span_id: str | None = Field(None, min_length=1, max_length=64)
    annotator: str = Field(
        min_length=1, max_length=128, description="Who gives the label (one label per run each)."
    )
    score: float | None = Field(
        None, allow_inf_nan=False, description="The label on the scorer's scale (0 to its top)."
    )
    verdict: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_VERDICT_CHARS,
        description="The label as `pass`/`fail`, or as one of the scorer's categories (a "
        "rubric-label scorer's choices); which are allowed is checked against the scorer.",
    )
    comment: str | None = Field(None, max_length=MAX_COMMENT_CHARS, description="Why.")
    created_at: datetime | None = Field(None, description="When given (default: now).")

    @model_validator(mode="after")
    def _one_run_one_verdict(self) -> LabelRequest:
        if (self.score is None) == (self.verdict is None):
            raise ValueError("set exactly one of 'score' or 'verdict'")
        by_trace = (self.target, self.trace_id, self.span_id)
        if self.run_id is None and None in by_trace:
            raise ValueError("name the run: 'run_id', or all of 'target', 'trace_id', 'span_id'")
        if self.run_id is not None and any(part is not None for part in by_trace):
            raise ValueError("name the run one way: 'run_id' or 'target'/'trace_id'/'span_id'")
        return self


class LabelBatch(BaseModel):
    """Up to `MAX_LABELS` labels, stored together or refused together."""

    model_config = ConfigDict(extra="forbid")

    labels: list[LabelRequest] = Field(min_length=1, max_length=MAX_LABELS)


class StoredLabel(BaseModel):
    id: str = Field(description="The label's id: one per run, scorer and annotator.")
    run_id: str
    scorer: str
    annotator: str
    scorer_version: str | None


class LabelsStored(BaseModel):
    stored: int
    labels: list[StoredLabel]
