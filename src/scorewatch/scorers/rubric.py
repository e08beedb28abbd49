"""The rubric scorer: a checklist gate. 1 x `scale` when the output meets every required
criterion of the rubric, else 0 (the reference system's `rubric-scorer`).

One judge call:

1. analyze (judge), the reference system's shape: `{"criteria": [{"criterion", "satisfied",
   "required", "reasoning"}], "overallAssessment"}`, one entry per criterion;
2. generate_score (function): 1 x `scale` when every criterion the judge marked `required` is
   `satisfied` (every criterion, when none is marked required), else 0; no rubric or no
   criteria judged -> 1 x `scale` (an absent rubric does not gate);
3. generate_reason (function): each criterion met or not with the judge's reasoning - no extra
   call.

`criteria` is a checklist string (one criterion per non-empty line; list markers such as `-`,
`*`, `1.` are dropped; all required) or a list of `{"description", "required"}` mappings
(`required` defaults to true). Without `criteria`, the rubric is read per run from a `rubric`
key of the run's request context or input. Range 0..scale, higher is better. Routing marker of
the analyze prompt: `Check the output against each criterion`.

For a judge that picks one of your labels instead, see `scorewatch.scorers.rubric_label`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import JudgeAnswer, field_of, items_of, judge, numbered, require_scale
from ._text import request_text, response_text

__all__ = ["RUBRIC_SCORER_ID", "Criterion", "create_rubric_scorer", "parse_rubric"]

RUBRIC_SCORER_ID = "rubric-scorer"

Criterion = tuple[str, bool]  # (description, required)

INSTRUCTIONS = (
    "You check an output against a checklist written by the user. Judge each criterion on its "
    "own and literally: satisfied only when the output clearly meets it. Copy each criterion's "
    "required flag as given."
)

_CARD = ScorerCard(
    name="rubric",
    id=RUBRIC_SCORER_ID,
    scorer_name="Rubric (LLM)",
    description="Checks the output against a rubric of criteria: 1 only when every required "
    "criterion is met",
    judge_calls=1,
    type=None,
    instructions=INSTRUCTIONS,
)

_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


class CriterionCheck(JudgeAnswer):
    criterion: str = ""
    satisfied: bool
    required: bool = True
    reasoning: str = ""


class RubricCheck(JudgeAnswer):
    criteria: list[CriterionCheck]
    overallAssessment: str = ""


def parse_rubric(rubric: Any) -> list[Criterion]:
    """The criteria of a rubric: a checklist string or a list of `{"description", "required"}`
    mappings (or `(description, required)` pairs); anything else is no rubric."""
    if isinstance(rubric, str):
        lines = (_MARKER.sub("", line, count=1).strip() for line in rubric.split("\n"))
        return [(line, True) for line in lines if line]
    if isinstance(rubric, Sequence):
        found: list[Criterion] = []
        for entry in rubric:
            if isinstance(entry, Mapping):
                found.append(
                    (str(entry.get("description", "")), entry.get("required") is not False)
                )
            elif isinstance(entry, tuple) and len(entry) == 2:
                found.append((str(entry[0]), entry[1] is not False))
            else:
                raise ValueError(f"a rubric criterion is a mapping with a description: {entry!r}")
        return found
    return []


def _rubric_in(source: Any) -> Any:
    if isinstance(source, Mapping):
        value = source.get("rubric")
    else:
        getter = getattr(source, "get", None)
        value = getter("rubric") if callable(getter) else None
    return value if isinstance(value, str | list) else None


def _task_text(run_input: Any) -> str:
    if isinstance(run_input, Mapping) and isinstance(run_input.get("originalTask"), str):
        return str(run_input["originalTask"])
    return request_text(run_input)


def _output_text(run_input: Any, run_output: Any) -> str:
    text = response_text(run_output)
    if text:
        return text
    if isinstance(run_input, Mapping) and isinstance(run_input.get("currentText"), str):
        return str(run_input["currentText"])
    return ""


def rubric_gate(analysis: Any, scale: float = 1) -> float:
    """1 x scale when the required criteria (all, when none is required) are satisfied, else 0;
    1 x scale without criteria."""
    checks = items_of(analysis, "criteria")
    if not checks:
        return 1 * scale
    required = [c for c in checks if field_of(c, "required") is True]
    gate = required or checks
    return (1 if all(field_of(c, "satisfied") is True for c in gate) else 0) * scale


@prebuilt(_CARD)
def create_rubric_scorer(
    model: str | JudgeModel,
    *,
    criteria: str | Sequence[Mapping[str, Any]] | None = None,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """A checklist gate: 1 x `scale` only when every required criterion is met, else 0.

    One judge call; the reason lists the criteria without a second call.
    """
    require_scale(scale)
    fixed = parse_rubric(criteria)

    def rubric_of(ctx: StepContext) -> list[Criterion]:
        if fixed:
            return fixed
        for source in (ctx.run.request_context, ctx.run.input):
            found = _rubric_in(source)
            if found is not None:
                return parse_rubric(found)
        return []

    def analyze_prompt(ctx: StepContext) -> str:
        rubric = rubric_of(ctx)
        if not rubric:
            return (
                "There is no rubric for this run. Answer with an empty list of criteria: "
                '{"criteria":[],"overallAssessment":"No rubric was given."}'
            )
        listed = numbered(
            [f"{text} ({'required' if needed else 'optional'})" for text, needed in rubric]
        )
        return f"""Check the output against each criterion of the rubric. For every criterion, \
in order, say whether the output satisfies it, copy its text and its required flag, and give \
your reasoning in one sentence. Then sum up in "overallAssessment".

Task:
{_task_text(ctx.run.input) or "(none)"}

Output:
{_output_text(ctx.run.input, ctx.run.output)}

Criteria:
{listed}

Format: {{"criteria":[{{"criterion":str,"satisfied":bool,"required":bool,"reasoning":str}}],\
"overallAssessment":str}}
"""

    def score(ctx: StepContext) -> float:
        return rubric_gate(ctx.results.analyze_step_result, scale)

    def explain(ctx: StepContext) -> str:
        analysis = ctx.results.analyze_step_result
        checks = items_of(analysis, "criteria")
        if not checks:
            return "No rubric applied to this run, so the check passes."
        lines = [
            f"{'met' if field_of(c, 'satisfied') is True else 'NOT met'} "
            f"({'required' if field_of(c, 'required') is True else 'optional'}): "
            f"{field_of(c, 'criterion')} - {field_of(c, 'reasoning')}"
            for c in checks
        ]
        verdict = "Every required criterion is met." if ctx.score else "The rubric is not met."
        summary = str(field_of(analysis, "overallAssessment") or "").strip()
        return "\n".join([verdict, *lines, *([summary] if summary else [])])

    return (
        _CARD.create_scorer(judge=judge(model, _CARD.instructions, model_options), scale=scale)
        .analyze(
            PromptStep(
                description="Check the output against each rubric criterion",
                create_prompt=analyze_prompt,
                output_schema=RubricCheck,
            )
        )
        .generate_score(score)
        .generate_reason(explain)
    )
