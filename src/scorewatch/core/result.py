"""The run a scorer is given (and how a caller's run becomes one), the context its steps see, and
the result it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer
from pydantic.alias_generators import to_snake

from .call import AgentCall, ScoreSource
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
    "coerce_run",
]

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

    @classmethod
    def of_call(cls, call: AgentCall, run_id: str | None = None) -> ScorerRun:
        """The run a scorer is given for `call`, under the scorer run id `run_id` (a new one
        when None). The one place a call's fields become the run's: its span and metadata are
        the run's `target_*`, and a call read from a trace is scoped to its span, as the
        reference's trace runs are (`target_scope`, `target_correlation_context`)."""
        span = call.score_source == "trace"
        # By position, in the fields' declaration order (half the cost of keywords on every
        # scored call); tests/core/test_core_run_of_call.py holds it to the keyword form.
        return cls(
            call.output,  # output
            call.input,  # input
            run_id,  # run_id
            call.ground_truth,  # ground_truth
            call.request_context,  # request_context
            None,  # expected_trajectory
            call.score_source,  # score_source
            call.target,  # target
            "span" if span else None,  # target_scope
            call.entity_type,  # target_entity_type
            call.trace_id,  # target_trace_id
            call.span_id,  # target_span_id
            # target_correlation_context
            {"traceId": call.trace_id, "spanId": call.span_id} if span else None,
            call.metadata,  # target_metadata
        )


_RUN_FIELD_NAMES = frozenset(f.name for f in fields(ScorerRun))


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


# Step results kept in the wire form when set to None: a step that ran and returned None.
_NULLABLE_STEP_FIELDS = {
    "preprocess_step_result": "preprocessStepResult",
    "analyze_step_result": "analyzeStepResult",
    "reason": "reason",
}


class ScorerRunSnapshot(_JudgeField, RunFields):
    """The run fields plus whatever the steps produced; `score` may be missing.

    This is what `ScorerRunError.result` holds after a failure. The run fields come from
    `RunFields`; a result always has its run id, and may have been stored without an output.
    In the wire form, None values are left out, except the result of a step that ran and
    returned None (`preprocessStepResult: null`, as the reference writes a step's null).
    """

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        kept = {
            spelling
            for name, alias in _NULLABLE_STEP_FIELDS.items()
            if name in self.model_fields_set
            for spelling in (name, alias)
        }
        return {key: value for key, value in data.items() if value is not None or key in kept}

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
    metadata: dict[str, Any] | None = None
    """scorewatch's additions, which the reference's result has no key for: `scorerVersion`,
    the scorer's `version_fingerprint`, and `scorerDeclaredVersion`, its declared `version`."""


class ScorerRunResult(ScorerRunSnapshot):
    """A finished run. `judge` is None for scorers without prompt steps.

    `score` is None exactly when a step returned `not_scorable()`; `not_scorable` then says which
    step and why. `model_dump(mode="json", by_alias=True)` is the reference system's camelCase
    wire format (no `score` key for a not-scorable run, as there).
    """


RESULT_RUN_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RunFields))
"""The run fields a result repeats (all of `ScorerRun`'s but `request_context_keys`, which only
steers the run), in declaration order."""
