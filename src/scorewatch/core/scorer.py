"""The scorer builder: `create_scorer(...)` and the immutable `Scorer` it returns."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from ..errors import ScorewatchError
from ..judge.protocol import JsonPromptInjection, JudgeModel
from .categories import frozen_categories
from .definition import JudgeConfig, PromptStep
from .errors import INVALID_SCORER_DEFINITION, MISSING_ID
from .result import ScorerRun, ScorerRunResult, ScoreSource, coerce_run
from .schema import SCORE_SCHEMA, compile_schema, validate_score
from .steps import STEP_ORDER, StepName, StepType
from .sync import synchronous

__all__ = ["Direction", "ResolvedJudge", "Scorer", "create_scorer"]

Direction = Literal["higher_is_better", "lower_is_better"]
PrepareRun = Callable[[ScorerRun], Any]


@dataclass(frozen=True, slots=True)
class ResolvedJudge:
    """The judge a prompt step will call, with scorer and step settings merged."""

    model: JudgeModel
    instructions: str
    json_prompt_injection: JsonPromptInjection
    on_finish: Callable[[Any], object] | None


@dataclass(frozen=True, slots=True)
class Step:
    name: StepName
    type: StepType
    function: Callable[[Any], Any] | None = None
    prompt: PromptStep | None = None
    judge: ResolvedJudge | None = None
    missing_judge: str | None = None
    schema: dict[str, Any] | None = None
    validate: Callable[[Any], Any] | None = field(default=None, repr=False)
    is_async: bool = False


def _definition_error(scorer_id: str, step: str, problem: str) -> ScorewatchError:
    return ScorewatchError(
        f"scorer {scorer_id!r}, step {step!r}: {problem}",
        code=INVALID_SCORER_DEFINITION,
        details={"scorerId": scorer_id, "step": step},
    )


def _checked_categories(
    scorer_id: str, categories: Mapping[str, float] | None
) -> Mapping[str, float] | None:
    if categories is None:
        return None
    try:
        return frozen_categories(categories)
    except ValueError as error:
        raise _definition_error(scorer_id, "categories", str(error)) from None


def _as_judge_config(value: Any, where: str) -> JudgeConfig | None:
    if value is None or isinstance(value, JudgeConfig):
        return value
    if isinstance(value, Mapping):
        return JudgeConfig(**value)
    raise TypeError(
        f"{where}: judge must be a JudgeConfig or a mapping, got {type(value).__name__}"
    )


def _resolve_model(model: str | JudgeModel, options: Mapping[str, Any] | None) -> JudgeModel:
    if isinstance(model, str):
        from ..judge.litellm_judge import LiteLLMJudge

        judge: JudgeModel = LiteLLMJudge(model, **dict(options or {}))
        return judge
    return model


def _resolve_judge(
    step_judge: JudgeConfig | None, scorer_judge: JudgeConfig | None
) -> tuple[ResolvedJudge | None, str | None]:
    def pick(name: str) -> Any:
        value = getattr(step_judge, name) if step_judge is not None else None
        if value is None and scorer_judge is not None:
            value = getattr(scorer_judge, name)
        return value

    model, instructions = pick("model"), pick("instructions")
    required = (("model", model), ("instructions", instructions))
    missing = [name for name, value in required if not value]
    if missing:
        return None, " and ".join(missing)
    injection = pick("json_prompt_injection")
    return (
        ResolvedJudge(
            model=_resolve_model(model, pick("model_options")),
            instructions=instructions,
            json_prompt_injection="auto" if injection is None else injection,
            on_finish=pick("on_finish"),
        ),
        None,
    )


class Scorer:
    """An immutable scorer. Step methods return a new scorer with the step appended.

    Steps must come in the canonical order preprocess → analyze → generate_score →
    generate_reason, each at most once (the reference system relies on its type checker for
    this; a Python port checks it when the scorer is built).
    """

    # Read on every run, so plain attributes set once (the scorer never changes), not properties;
    # the version, computed on first use, is a `cached_property` kept in `__dict__`.
    __slots__ = (
        "__dict__",
        "categories",
        "declared_version",
        "description",
        "direction",
        "has_generate_score",
        "has_judge",
        "id",
        "judge",
        "name",
        "prepare_run",
        "scale",
        "steps",
        "type",
    )

    def __init__(
        self,
        *,
        id: str,
        description: str,
        name: str | None = None,
        judge: JudgeConfig | None = None,
        type: Any = None,
        prepare_run: PrepareRun | None = None,
        scale: float = 1,
        direction: Direction = "higher_is_better",
        steps: tuple[Step, ...] = (),
        version: str | None = None,
        categories: Mapping[str, float] | None = None,
    ) -> None:
        self.id = id
        self.name = name or id
        self.description = description
        self.judge = judge
        self.type = type
        self.prepare_run = prepare_run
        self.scale = scale
        self.direction: Direction = direction
        self.steps = steps
        self.has_generate_score = any(step.name == "generate_score" for step in steps)
        self.has_judge = judge is not None or any(step.type == "prompt" for step in steps)
        self.declared_version = version
        self.categories = _checked_categories(id, categories)

    def __repr__(self) -> str:
        return f"Scorer(id={self.id!r}, steps={[s.name for s in self.steps]})"

    @cached_property
    def version_fingerprint(self) -> str:
        """A short hash of everything that decides this scorer's scores (core/fingerprint.py
        lists the inputs): the same definition gives the same value in every process, a change
        to any input a new one. Every result, stored row, evaluation event and score metric
        carries it as the scorer version. Computed on first use, then a plain attribute."""
        from .fingerprint import describe_scorer, fingerprint_of

        return fingerprint_of(describe_scorer(self))

    @cached_property
    def version_metadata(self) -> dict[str, str]:
        """What a result's `metadata` says of the scorer version (camelCase, as on the wire):
        `scorerVersion` (the fingerprint) and `scorerDeclaredVersion` when one was declared.
        Shared: copy it before changing it."""
        metadata = {"scorerVersion": self.version_fingerprint}
        if self.declared_version is not None:
            metadata["scorerDeclaredVersion"] = self.declared_version
        return metadata

    def get_steps(self) -> list[dict[str, str]]:
        listed: list[dict[str, str]] = []
        for step in self.steps:
            entry: dict[str, str] = {"name": step.name, "type": step.type}
            if step.prompt is not None:
                entry["description"] = step.prompt.description
            listed.append(entry)
        return listed

    def preprocess(self, step: Any) -> Scorer:
        return self._with_step("preprocess", step)

    def analyze(self, step: Any) -> Scorer:
        return self._with_step("analyze", step)

    def generate_score(self, step: Any) -> Scorer:
        return self._with_step("generate_score", step)

    def generate_reason(self, step: Any) -> Scorer:
        return self._with_step("generate_reason", step)

    def _arguments(self) -> dict[str, Any]:
        """The keywords that build this scorer again: `copy` and each added step start here."""
        return {
            "id": self.id,
            "description": self.description,
            "name": self.name,
            "judge": self.judge,
            "type": self.type,
            "prepare_run": self.prepare_run,
            "scale": self.scale,
            "direction": self.direction,
            "steps": self.steps,
            "version": self.declared_version,
            "categories": self.categories,
        }

    def copy(self, **changes: Any) -> Scorer:
        """This scorer with some fields changed (`id`, `name`, `description`, `scale`, ...)."""
        fields = self._arguments()
        unknown = set(changes) - set(fields) - {"steps"}
        if unknown or "steps" in changes:
            raise TypeError(
                f"Scorer.copy() cannot change {sorted(unknown | {'steps'} & set(changes))}"
            )
        fields.update(changes)
        if "judge" in changes and self.steps:
            raise TypeError("Scorer.copy() cannot change the judge of a scorer that has steps")
        return Scorer(**fields)

    def _with_step(self, name: StepName, definition: Any) -> Scorer:
        if self.steps:
            last = self.steps[-1].name
            if STEP_ORDER.index(name) <= STEP_ORDER.index(last):
                raise _definition_error(
                    self.id,
                    name,
                    f"cannot follow {last!r}: steps run in the order "
                    f"{' -> '.join(STEP_ORDER)}, each at most once",
                )
        step = self._build_step(name, definition)
        return Scorer(**{**self._arguments(), "steps": (*self.steps, step)})

    def _build_step(self, name: StepName, definition: Any) -> Step:
        if isinstance(definition, Mapping) and "create_prompt" in definition:
            definition = PromptStep(**definition)
        if isinstance(definition, PromptStep):
            return self._build_prompt_step(name, definition)
        if not callable(definition):
            raise _definition_error(
                self.id,
                name,
                f"expected a function or a PromptStep, got {type(definition).__name__}",
            )
        return Step(
            name=name,
            type="function",
            function=definition,
            is_async=inspect.iscoroutinefunction(definition),
        )

    def _build_prompt_step(self, name: StepName, prompt: PromptStep) -> Step:
        if not callable(prompt.create_prompt):
            raise _definition_error(self.id, name, "PromptStep.create_prompt is not callable")
        schema: dict[str, Any] | None = None
        validate: Callable[[Any], Any] | None = None
        if name == "generate_score":
            schema, validate = SCORE_SCHEMA, validate_score
        elif name in ("preprocess", "analyze"):
            if prompt.output_schema is None:
                raise _definition_error(self.id, name, "a prompt step here needs an output_schema")
            try:
                schema, validate = compile_schema(prompt.output_schema)
            except ValueError as exc:
                raise _definition_error(self.id, name, f"output_schema: {exc}") from None
        try:
            step_judge = _as_judge_config(prompt.judge, f"scorer {self.id!r}, step {name!r}")
        except TypeError as exc:
            raise _definition_error(self.id, name, str(exc)) from None
        resolved, missing = _resolve_judge(step_judge, self.judge)
        return Step(
            name=name,
            type="prompt",
            prompt=prompt,
            judge=resolved,
            missing_judge=missing,
            schema=schema,
            validate=validate,
        )

    async def run(
        self,
        run: ScorerRun | Mapping[str, Any] | None = None,
        /,
        *,
        input: Any = None,
        output: Any = None,
        run_id: str | None = None,
        ground_truth: Any = None,
        request_context: Any = None,
        score_source: ScoreSource | None = None,
        target: str | None = None,
        target_trace_id: str | None = None,
        target_span_id: str | None = None,
        target_metadata: dict[str, Any] | None = None,
        emit_score: bool = True,
    ) -> ScorerRunResult:
        """Run the steps in order and return the result, or raise `ScorerRunError`.

        Pass the run as keywords, or as a `ScorerRun` / mapping (camelCase keys accepted) for the
        less common fields. `emit_score=False` keeps telemetry from emitting an evaluation event.
        """
        keywords: dict[str, Any] = {
            "input": input,
            "output": output,
            "run_id": run_id,
            "ground_truth": ground_truth,
            "request_context": request_context,
            "score_source": score_source,
            "target": target,
            "target_trace_id": target_trace_id,
            "target_span_id": target_span_id,
            "target_metadata": target_metadata,
        }
        if run is None:
            prepared = ScorerRun(**keywords)
        else:
            given = [name for name, value in keywords.items() if value is not None]
            if given:
                # Silently preferring one of the two would drop the caller's data.
                raise TypeError(
                    f"scorer {self.id!r}: pass the run either as a ScorerRun/mapping or as "
                    f"keywords, not both (also got {', '.join(given)})"
                )
            prepared, internal_emit = coerce_run(run)
            emit_score = emit_score and internal_emit
        return await _run_scorer()(self, prepared, emit_score)

    run_sync = synchronous(run)


RunScorer = Callable[[Scorer, ScorerRun, bool], Awaitable[ScorerRunResult]]
_RUN_SCORER: RunScorer | None = None


def _run_scorer() -> RunScorer:
    # The pipeline imports this module, so it is bound on first use, then read from a global
    # (an import statement inside `run` costs more than a function-only step).
    global _RUN_SCORER
    if _RUN_SCORER is None:
        from .pipeline import run_scorer

        _RUN_SCORER = run_scorer
    return _RUN_SCORER


def create_scorer(
    id: str | None = None,
    description: str = "",
    name: str | None = None,
    judge: JudgeConfig | Mapping[str, Any] | None = None,
    type: Any = None,
    prepare_run: PrepareRun | None = None,
    *,
    scale: float = 1,
    direction: Direction = "higher_is_better",
    version: str | None = None,
    categories: Mapping[str, float] | None = None,
) -> Scorer:
    """Start a scorer. Chain `.preprocess()`, `.analyze()`, `.generate_score()` (required) and
    `.generate_reason()`; each returns a new scorer.

    `scale` is the top of the score range (telemetry buckets scale with it); `direction` says
    whether a higher score is better, so dashboards and alerts can invert it. `version` is a
    version you declare (`"2025-06-rubric-v3"`): it is one input of the scorer's
    `version_fingerprint` and is carried beside it, for people to read. `categories` (label ->
    score, each score once) says the scorer's scores are categories: human labels may then
    name one (`verdict`), and agreement compares categories. Like `scale`, they label scores
    rather than decide them, so they are not an input of the fingerprint.
    """
    if not id or not isinstance(id, str):
        raise ScorewatchError(
            "Scorers must have an id: create_scorer(id=...) was given "
            + ("no id" if not id else f"a {id.__class__.__name__}"),
            code=MISSING_ID,
        )
    if prepare_run is not None and not callable(prepare_run):
        raise _definition_error(id, "prepare_run", "prepare_run must be callable")
    if direction not in ("higher_is_better", "lower_is_better"):
        raise _definition_error(id, "direction", f"unknown direction {direction!r}")
    if version is not None and (not isinstance(version, str) or not version.strip()):
        raise _definition_error(id, "version", "version must be a non-empty string")
    return Scorer(
        id=id,
        description=description,
        name=name,
        judge=_as_judge_config(judge, f"scorer {id!r}"),
        type=type,
        prepare_run=prepare_run,
        scale=scale,
        direction=direction,
        version=version,
        categories=categories,
    )
