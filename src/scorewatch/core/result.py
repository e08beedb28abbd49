"""The run a scorer is given (and how a caller's run becomes one), the context its steps see, and
the result it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from random import getrandbits
from typing import Any, Literal, TypeVar

from pydantic import Field
from pydantic.alias_generators import to_snake

from ..errors import ScorewatchError
from .errors import INVALID_RUN
from .not_scorable import NotScorableInfo
from .records import JudgeResults, _JudgeField

__all__ = [
    "RESULT_RUN_FIELDS",
    "RunFields",
    "Score",
    "ScoreSource",
    "ScorerRun",
    "ScorerRunResult",
    "ScorerRunSnapshot",
    "StepContext",
    "StepResults",
    "check_run",
    "coerce_run",
    "new_run_id",
]

ScoreSource = Literal["live", "experiment", "trace", "direct"]
Score = int | float
"""A score keeps the type its step returned: an int step result stays an int."""


@dataclass
class RunFields:
    """The fields of a run, declared once: `ScorerRun` is made of them, and a result
    (`ScorerRunSnapshot`, `ScorerRunResult`) repeats them as the run had them."""

    # No instance layout of its own, so that both a slotted dataclass and a pydantic model can
    # build on it.
    __slots__ = ()

    output: Any
    input: Any = None
    run_id: str | None = None
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


@dataclass(slots=True)
class ScorerRun(RunFields):
    """One thing to score. `output` is required; everything else is optional.

    `target` names the agent or workflow being scored (a low-cardinality metric label);
    `target_trace_id`/`target_span_id` point at the evaluated span when it is known;
    `request_context_keys` only steers the run, so results do not repeat it.
    """

    score_source: ScoreSource | None = None
    request_context_keys: list[str] | None = None


_RUN_FIELD_NAMES = frozenset(f.name for f in fields(ScorerRun))
_STRING_FIELDS = (
    "run_id",
    "score_source",
    "target",
    "target_scope",
    "target_entity_type",
    "target_trace_id",
    "target_span_id",
    "score_trace_id",
)
_MAPPING_FIELDS = ("target_metadata", "target_correlation_context")


def coerce_run(run: ScorerRun | Mapping[str, Any]) -> tuple[ScorerRun, bool]:
    """A fresh `ScorerRun` (the caller's object is never mutated) and whether to emit the score.

    A mapping may use snake_case or the reference system's camelCase keys. Its `_internal` key is
    framework-only: it is read (`emitObservabilityScore`) and dropped, never reaching the result.
    """
    if isinstance(run, ScorerRun):
        return replace(run), True
    if not isinstance(run, Mapping):
        raise TypeError(f"a scorer run is a ScorerRun or a mapping, got {type(run).__name__}")
    emit = True
    fields: dict[str, Any] = {}
    for key, value in run.items():
        if key == "_internal":
            if isinstance(value, Mapping) and value.get("emitObservabilityScore") is False:
                emit = False
            continue
        name = to_snake(key)
        if name not in _RUN_FIELD_NAMES:
            known = ", ".join(sorted(_RUN_FIELD_NAMES))
            raise TypeError(f"unknown scorer run field {key!r}; known fields: {known}")
        fields[name] = value
    if "output" not in fields:
        fields["output"] = None
    return ScorerRun(**fields), emit


_UUID4_MASK = ~((0xF << 76) | (0x3 << 62))
_UUID4_BITS = (0x4 << 76) | (0x2 << 62)


def new_run_id() -> str:
    """A random version-4 UUID string, like `str(uuid.uuid4())` at a fraction of the cost.

    A run id must be unique, not secret: the interpreter's generator (seeded from the OS, and
    reseeded in a forked child) avoids a system call per run, which `uuid4()` makes.
    """
    text = "%032x" % ((getrandbits(128) & _UUID4_MASK) | _UUID4_BITS)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def check_run(run: ScorerRun, scorer_id: str) -> None:
    """Reject typed run fields of the wrong type, which would make a result that cannot be loaded
    back from its own JSON. `input`, `output` and the other free-form fields are not checked."""
    if (
        run.target is None
        and run.target_trace_id is None
        and run.target_span_id is None
        and run.score_source is None
        and run.target_metadata is None
        and run.target_scope is None
        and run.target_entity_type is None
        and run.target_correlation_context is None
        and run.request_context_keys is None
        and (run.run_id is None or type(run.run_id) is str)
        and run.score_trace_id is None
    ):
        return  # nothing typed to check: the common direct call
    for name in _STRING_FIELDS:
        value = getattr(run, name)
        if value is not None and not isinstance(value, str):
            raise _invalid_run(scorer_id, name, "a string", value)
    for name in _MAPPING_FIELDS:
        value = getattr(run, name)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(key, str) for key in value)
        ):
            raise _invalid_run(scorer_id, name, "a dict with string keys", value)
    keys = run.request_context_keys
    if keys is not None and not (
        isinstance(keys, list) and all(isinstance(key, str) for key in keys)
    ):
        raise _invalid_run(scorer_id, "request_context_keys", "a list of strings", keys)


def _invalid_run(scorer_id: str, name: str, expected: str, value: Any) -> ScorewatchError:
    return ScorewatchError(
        f"scorer {scorer_id!r}: run field {name!r} must be {expected}, got {type(value).__name__}",
        code=INVALID_RUN,
        details={"scorerId": scorer_id, "field": name},
    )


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


class ScorerRunSnapshot(_JudgeField, RunFields):
    """The run fields plus whatever the steps produced; `score` may be missing.

    This is what `ScorerRunError.result` holds after a failure. The run fields come from
    `RunFields`; a result always has its run id, and may have been stored without an output.
    """

    run_id: str
    output: Any = None
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


RESULT_RUN_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RunFields))
"""The run fields a result repeats (all of `ScorerRun`'s but `request_context_keys`, which only
steers the run), in declaration order."""

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
