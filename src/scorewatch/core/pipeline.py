"""The run pipeline: prepare the run, execute the steps in order, build the result.

What a run does, in the reference system's terms: docs/reference-semantics.md.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Mapping
from operator import attrgetter
from random import getrandbits
from time import perf_counter
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import ScorewatchError
from .errors import INVALID_RUN, INVALID_STEP_RESULT, MISSING_GENERATE_SCORE, ScorerRunError
from .events import RunListener, StepOutcome, current_observers, tell
from .not_scorable import NotScorable, NotScorableInfo
from .offload import STEP_EXECUTOR, run_off_loop
from .prompt import PromptStepFailure, execute_prompt_step
from .records import JudgeExecutionFailure, JudgeExecutionSuccess, JudgeResults, JudgeStepRecord
from .result import (
    RESULT_RUN_FIELDS,
    Score,
    ScorerRun,
    ScorerRunResult,
    ScorerRunSnapshot,
    StepContext,
    StepResults,
    coerce_run,
)
from .schema import is_finite_number
from .scorer import Scorer, Step
from .steps import StepName, camel_step

__all__ = ["build_trusted", "check_run", "new_run_id", "run_scorer"]

_PROMPT_FIELDS: dict[StepName, str] = {
    "preprocess": "preprocess_prompt",
    "analyze": "analyze_prompt",
    "generate_score": "generate_score_prompt",
    "generate_reason": "generate_reason_prompt",
}


# -- preparing the run and building its result ---------------------------------------------

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
# The typed fields read at once (one C call each): a run whose string fields hold strings or
# None, and whose mapping and list fields are unset, needs no closer look.
_STRING_VALUES = attrgetter(*_STRING_FIELDS)
_STRUCTURED_VALUES = attrgetter(*_MAPPING_FIELDS, "request_context_keys")
_UNSET_STRUCTURES = (None,) * (len(_MAPPING_FIELDS) + 1)
_PLAIN_FIELD_TYPES = frozenset({str, type(None)})
_TEXT = frozenset({str})


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
    if _PLAIN_FIELD_TYPES.issuperset(map(type, _STRING_VALUES(run))):
        metadata, correlation, keys = _STRUCTURED_VALUES(run)
        if (
            keys is None
            and (
                metadata is None
                or (type(metadata) is dict and _TEXT.issuperset(map(type, metadata)))
            )
            and (
                correlation is None
                or (type(correlation) is dict and _TEXT.issuperset(map(type, correlation)))
            )
        ):
            # Strings and Nones, and the mappings a call gives (a trace's run: its metadata and
            # correlation context) keyed by plain text: what the checks below accept.
            return
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


_SnapshotT = TypeVar("_SnapshotT", bound=ScorerRunSnapshot)
# What `model_construct` sets, each through its own slot's descriptor (a model's own
# `__setattr__` validates): a third cheaper than `object.__setattr__` by name, which looks the
# descriptor up again on every call (a result is made on every run).
_new_instance = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_TEMPLATES: dict[type[ScorerRunSnapshot], dict[str, Any]] = {}


def build_trusted(cls: type[_SnapshotT], values: dict[str, Any]) -> _SnapshotT:
    """An instance from values the pipeline built itself, without re-validating them.

    The same as `cls.model_construct(**values)` for these field-only models (every default is
    None), at a fraction of the cost: result construction sits on every run's hot path.
    """
    fields = _template(cls).copy()
    fields.update(values)
    return _trusted(cls, fields, set(values))


def _template(cls: type[ScorerRunSnapshot]) -> dict[str, Any]:
    """Every field of `cls`, None: what a field left unset holds."""
    template = _TEMPLATES.get(cls)
    if template is None:
        template = _TEMPLATES[cls] = dict.fromkeys(cls.__pydantic_fields__)
    return template


def _trusted(cls: type[_SnapshotT], fields: dict[str, Any], given: set[str]) -> _SnapshotT:
    """An instance holding `fields` (every field of `cls`), `given` the ones set."""
    instance = _new_instance(cls)
    _set_dict(instance, fields)
    _set_fields_set(instance, given)
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


# Values a step function commonly returns, which are never awaitable: checked by exact type
# before the (much slower) `inspect.isawaitable`.
_PLAIN_TYPES = frozenset({float, int, str, dict, list, tuple, bool, type(None)})


def _check_score(scorer: Scorer, value: Any) -> Score:
    if type(value) is float and value - value == 0.0:  # finite: inf - inf and nan are nan
        return value
    if type(value) is NotScorable:
        return value  # type: ignore[return-value]
    if not is_finite_number(value):
        raise ScorewatchError(
            f"scorer {scorer.id!r}, step 'generate_score': returned {value!r} "
            f"({type(value).__name__}); a score must be a finite number",
            code=INVALID_STEP_RESULT,
            details={"scorerId": scorer.id, "step": "generate_score"},
        )
    # An integer stays an integer (a reason interpolating it shows `1`, not `1.0`); other
    # numeric types (numpy scalars, Fraction, Decimal) become plain Python numbers.
    return int(value) if isinstance(value, numbers.Integral) else float(value)


class _Accumulator:
    """What the steps have produced so far."""

    __slots__ = ("completed", "judge", "not_scorable", "prompts", "reason", "results", "score")

    def __init__(self) -> None:
        self.results = StepResults()
        self.prompts: dict[str, str] = {}
        self.judge: JudgeResults = {}
        self.completed: list[StepName] = []
        self.score: Score | None = None
        self.reason: Any = None
        self.not_scorable: NotScorableInfo | None = None

    def add_execution(self, step: StepName, execution: Any) -> None:
        record = self.judge.get(step)
        executions = [*record.executions, execution] if record else [execution]
        self.judge[step] = JudgeStepRecord(executions=executions)

    def has_scorer_fields(self) -> bool:
        results = self.results
        return bool(
            self.judge
            or self.prompts
            or results.preprocess_step_result is not None
            or results.analyze_step_result is not None
            or results.generate_score_step_result is not None
        )

    def fields(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "reason": self.reason,
            "preprocess_step_result": self.results.preprocess_step_result,
            "analyze_step_result": self.results.analyze_step_result,
            **self.prompts,
            "judge": self.judge or None,
        }


_RUN_VALUES = attrgetter(*RESULT_RUN_FIELDS)
_RESULT_TEMPLATE = _template(ScorerRunResult)


def _run_fields(run: ScorerRun) -> dict[str, Any]:
    return dict(zip(RESULT_RUN_FIELDS, _RUN_VALUES(run), strict=True))


# Set in every result: the run fields, the score (None when not scorable), judge and metadata.
_ALWAYS_SET: frozenset[str] = frozenset((*RESULT_RUN_FIELDS, "score", "judge", "metadata"))
# The field a completed step sets, even to None: a step that ran and returned None keeps the null
# in the wire form, as the reference's; a scorer without the step leaves the field unset.
_SET_BY_STEP: dict[str, str] = {
    "preprocess": "preprocess_step_result",
    "analyze": "analyze_step_result",
    "generate_score": "score",
    "generate_reason": "reason",
}
# The fields set in a result by the steps completed (a prefix of at most four step names, so at
# most a few entries per scorer shape): the set made once, copied for each result.
_GIVEN: dict[tuple[StepName, ...], frozenset[str]] = {}


def _finished(scorer: Scorer, run: ScorerRun, acc: _Accumulator) -> ScorerRunResult:
    """The run's result, its fields written once into the instance's own dictionary (the
    template's order, every field there; unset ones None)."""
    results = acc.results
    fields = _RESULT_TEMPLATE.copy()
    # The run's fields (`RESULT_RUN_FIELDS`) one store each: a copy of the template and a
    # store per field cost a third of `update(zip(...))`, which walks a pair per field.
    # tests/core/test_core_finished.py holds these to `RESULT_RUN_FIELDS`.
    fields["output"] = run.output
    fields["input"] = run.input
    fields["run_id"] = run.run_id
    fields["ground_truth"] = run.ground_truth
    fields["request_context"] = run.request_context
    fields["expected_trajectory"] = run.expected_trajectory
    fields["score_source"] = run.score_source
    fields["target"] = run.target
    fields["target_scope"] = run.target_scope
    fields["target_entity_type"] = run.target_entity_type
    fields["target_trace_id"] = run.target_trace_id
    fields["target_span_id"] = run.target_span_id
    fields["target_correlation_context"] = run.target_correlation_context
    fields["target_metadata"] = run.target_metadata
    fields["score_trace_id"] = run.score_trace_id
    fields["score"] = acc.score
    fields["preprocess_step_result"] = results.preprocess_step_result
    fields["analyze_step_result"] = results.analyze_step_result
    fields["reason"] = acc.reason
    fields["judge"] = acc.judge or None
    fields["metadata"] = scorer.version_metadata.copy()
    completed = tuple(acc.completed)
    set_by_steps = _GIVEN.get(completed)
    if set_by_steps is None:
        set_by_steps = _GIVEN[completed] = _ALWAYS_SET.union(
            map(_SET_BY_STEP.__getitem__, completed)
        )
    given = set(set_by_steps)
    # A step may have written an earlier result into `ctx.results`: a value there is set too.
    if results.preprocess_step_result is not None:
        given.add("preprocess_step_result")
    if results.analyze_step_result is not None:
        given.add("analyze_step_result")
    if acc.not_scorable is not None:
        fields["not_scorable"] = acc.not_scorable
        given.add("not_scorable")
    if acc.prompts:
        fields.update(acc.prompts)
        given.update(acc.prompts)
    return _trusted(ScorerRunResult, fields, given)


async def _prepare(scorer: Scorer, run: ScorerRun) -> ScorerRun:
    if scorer.prepare_run is None:
        return run
    prepared = scorer.prepare_run(run)
    if inspect.isawaitable(prepared):
        prepared = await prepared
    if isinstance(prepared, ScorerRun):
        return prepared
    if isinstance(prepared, Mapping):
        return coerce_run(prepared)[0]
    raise TypeError(
        f"scorer {scorer.id!r}: prepare_run returned {type(prepared).__name__}, "
        "expected a ScorerRun or a mapping"
    )


async def _execute_function_step(scorer: Scorer, step: Step, ctx: StepContext) -> Any:
    value = step.function(ctx)  # type: ignore[misc]
    if type(value) not in _PLAIN_TYPES and inspect.isawaitable(value):
        value = await value
    if step.name == "generate_score":
        value = _check_score(scorer, value)
    return value


def _step_finished(
    listeners: tuple[RunListener, ...],
    step: Step,
    started: float,
    error: BaseException | None = None,
    prompt: str | None = None,
    execution: JudgeExecutionSuccess | JudgeExecutionFailure | None = None,
    value: Any = None,
) -> None:
    # By position, in the fields' declaration order (keywords cost a listened run's every step
    # about twice as much); tests/core/test_core_step_outcome.py checks each field it fills.
    outcome = StepOutcome(
        step.name,  # step
        step.type,  # step_type
        perf_counter() - started,  # duration_s
        error,  # error
        prompt,  # prompt
        execution,  # execution
        value,  # result
    )
    tell(listeners, "step_finished", outcome)


async def run_scorer(
    scorer: Scorer, run: ScorerRun, emit_score: bool, checked: bool = False
) -> ScorerRunResult:
    """Run `scorer`'s steps on `run` (docs/reference-semantics.md). `checked`: the caller vouches
    that the run's typed fields hold what `check_run` accepts (a run `ScorerRun.of_call` made of
    a call whose fields were checked), so they are not checked again, unless the scorer's
    `prepare_run` may have changed them."""
    steps = scorer.steps
    if not scorer.has_generate_score:
        raise ScorewatchError(
            f"scorer {scorer.id!r} has no generate_score step",
            code=MISSING_GENERATE_SCORE,
            details={"scorerId": scorer.id, "steps": ", ".join(camel_step(s.name) for s in steps)},
        )
    if scorer.prepare_run is not None:
        run = await _prepare(scorer, run)
        check_run(run, scorer.id)
    elif not checked:
        check_run(run, scorer.id)
    if not run.run_id:
        run.run_id = new_run_id()

    listeners: tuple[RunListener, ...] = ()
    observers = current_observers()
    if observers.subscribers:
        listeners = observers.start_run(scorer, run, emit_score)
        for listener in listeners:
            trace_id = getattr(listener, "trace_id", None)
            if trace_id:
                run.score_trace_id = trace_id
                break
    # Timed only for listeners, which hear the durations.
    run_started = perf_counter() if listeners else 0.0
    acc = _Accumulator()
    results, completed = acc.results, acc.completed
    # One context for the whole run: steps share `results` anyway, and only generate_reason
    # reads `score` (set just before it runs).
    ctx = StepContext(run, results)
    step_started = run_started
    for step in steps:
        name = step.name
        if name == "generate_reason":
            ctx.score = acc.score
        if listeners:
            step_started = perf_counter()
            tell(listeners, "step_started", name, step.type)
        prompt: str | None = None
        execution: JudgeExecutionSuccess | None = None
        try:
            function = step.function
            if function is None:
                value, prompt, execution = await execute_prompt_step(scorer, step, ctx, listeners)
            elif step.is_async:
                value = await _execute_function_step(scorer, step, ctx)
            else:
                # The common case, inlined: a synchronous function returning a plain value.
                executor = STEP_EXECUTOR.get()
                value = function(ctx) if executor is None else await run_off_loop(
                    executor, function, ctx
                )  # fmt: skip
                if type(value) not in _PLAIN_TYPES and inspect.isawaitable(value):
                    value = await value
                if name == "generate_score":
                    value = _check_score(scorer, value)
        except Exception as raised:
            error = _run_error(scorer, step, run, acc, raised)
            cause = error.__cause__
            if listeners:
                failure = raised if isinstance(raised, PromptStepFailure) else None
                _step_finished(
                    listeners,
                    step,
                    step_started,
                    error=cause,
                    prompt=failure.prompt if failure else None,
                    execution=failure.execution if failure else None,
                )
                tell(listeners, "run_failed", error, perf_counter() - run_started)
            raise error from cause
        except BaseException as interrupted:
            # Cancelled (e.g. by a caller's timeout): listeners still hear the run end, so none
            # leaves its span current in the caller's context.
            if listeners:
                tell(listeners, "run_failed", interrupted, perf_counter() - run_started)
            raise
        if execution is not None:
            acc.prompts[_PROMPT_FIELDS[name]] = prompt  # type: ignore[assignment]
            acc.add_execution(name, execution)
        if listeners:
            _step_finished(listeners, step, step_started, None, prompt, execution, value)
        if type(value) is NotScorable:
            # The run ends here: later steps are skipped (no judge call), earlier results,
            # this step's prompt and judge record are kept, and there is no score.
            acc.not_scorable = NotScorableInfo(step=name, reason=value.reason)
            acc.score = None  # even after generate_score ran, as in the reference
            break
        # What the step returned, where later steps and the result read it (inlined: once a
        # step, every run).
        if name == "generate_score":
            results.generate_score_step_result = acc.score = value
        elif name == "preprocess":
            results.preprocess_step_result = value
        elif name == "analyze":
            results.analyze_step_result = value
        else:
            acc.reason = value
        completed.append(name)

    result = _finished(scorer, run, acc)
    if listeners:
        tell(listeners, "run_finished", result, perf_counter() - run_started)
    return result


def _run_error(
    scorer: Scorer, step: Step, run: ScorerRun, acc: _Accumulator, raised: Exception
) -> ScorerRunError:
    cause: BaseException = raised
    if isinstance(raised, PromptStepFailure):
        cause = raised.cause
        if raised.execution is not None:
            acc.add_execution(step.name, raised.execution)
    snapshot = None
    if acc.has_scorer_fields():
        values = {**_run_fields(run), **acc.fields(), "metadata": scorer.version_metadata.copy()}
        snapshot = build_trusted(
            ScorerRunSnapshot, {key: value for key, value in values.items() if value is not None}
        )
    return ScorerRunError(
        cause,
        scorer_id=scorer.id,
        steps=[s.name for s in scorer.steps],
        failed_step=step.name,
        completed_steps=list(dict.fromkeys(acc.completed)),
        result=snapshot,
    )
