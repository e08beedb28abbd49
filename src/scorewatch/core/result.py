"""The run a scorer is given, the context its steps see, and the result it returns."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar

from pydantic import Field

from .not_scorable import NotScorableInfo
from .records import JudgeResults, _JudgeField

__all__ = [
    "RESULT_RUN_FIELDS",
    "Score",
    "ScoreSource",
    "ScorerRun",
    "ScorerRunResult",
    "ScorerRunSnapshot",
    "StepContext",
    "StepResults",
]

ScoreSource = Literal["live", "experiment", "trace", "direct"]
Score = int | float
"""A score keeps the type its step returned: an int step result stays an int."""


@dataclass(slots=True)
class ScorerRun:
    """One thing to score. `output` is required; everything else is optional.

    `target` names the agent or workflow being scored (a low-cardinality metric label);
    `target_trace_id`/`target_span_id` point at the evaluated span when it is known.
    """

    output: Any
    input: Any = None
    run_id: str | None = None
    ground_truth: Any = None
    request_context: Any = None
    request_context_keys: list[str] | None = None
    expected_trajectory: Any = None
    score_source: ScoreSource | None = None
    target: str | None = None
    target_scope: str | None = None
    target_entity_type: str | None = None
    target_trace_id: str | None = None
    target_span_id: str | None = None
    target_correlation_context: dict[str, Any] | None = None
    target_metadata: dict[str, Any] | None = None
    score_trace_id: str | None = None


@dataclass(slots=True)
class StepResults:
    """What earlier steps returned, as steps see it in `ctx.results`."""

    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    generate_score_step_result: Any = None


@dataclass(slots=True)
class StepContext:
    """The single argument of every step function and `create_prompt`.

    `score` is set for generate_reason (the generate_score result).
    """

    run: ScorerRun
    results: StepResults = field(default_factory=StepResults)
    score: Score | None = None


class ScorerRunSnapshot(_JudgeField):
    """The run fields plus whatever the steps produced; `score` may be missing.

    This is what `ScorerRunError.result` holds after a failure.
    """

    run_id: str
    input: Any = None
    output: Any = None
    ground_truth: Any = None
    request_context: Any = None
    expected_trajectory: Any = None
    score_source: str | None = None
    target: str | None = None
    target_scope: str | None = None
    target_entity_type: str | None = None
    target_trace_id: str | None = None
    target_span_id: str | None = None
    target_correlation_context: dict[str, Any] | None = None
    target_metadata: dict[str, Any] | None = None
    score_trace_id: str | None = None
    score: Score | None = None
    not_scorable: NotScorableInfo | None = None
    reason: Any = None
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge: JudgeResults | None = Field(default=None)


class ScorerRunResult(ScorerRunSnapshot):
    """A finished run. `judge` is None for scorers without prompt steps.

    `score` is None exactly when a step returned `not_scorable()`; `not_scorable` then says which
    step and why. `model_dump(mode="json", by_alias=True)` is the reference system's camelCase
    wire format (no `score` key for a not-scorable run, as there).
    """


RESULT_RUN_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(ScorerRun) if f.name in ScorerRunSnapshot.model_fields
)
"""The `ScorerRun` fields a result repeats (all but `request_context_keys`, which only steers
the run), in `ScorerRun`'s order: the run's fields are named once, on `ScorerRun`."""

_SnapshotT = TypeVar("_SnapshotT", bound=ScorerRunSnapshot)
_object_setattr = object.__setattr__
_TEMPLATES: dict[type[ScorerRunSnapshot], dict[str, Any]] = {}


def build_trusted(cls: type[_SnapshotT], values: dict[str, Any]) -> _SnapshotT:
    """An instance from values the pipeline built itself, without re-validating them.

    The same as `cls.model_construct(**values)` for these field-only models (every default is
    None), at a fraction of the cost: result construction sits on every run's hot path.
    """
    instance = cls.__new__(cls)
    template = _TEMPLATES.get(cls)
    if template is None:
        template = _TEMPLATES[cls] = dict.fromkeys(cls.__pydantic_fields__)
    fields = template.copy()
    fields.update(values)
    _object_setattr(instance, "__dict__", fields)
    _object_setattr(instance, "__pydantic_fields_set__", set(values))
    _object_setattr(instance, "__pydantic_extra__", None)
    _object_setattr(instance, "__pydantic_private__", None)
    return instance
