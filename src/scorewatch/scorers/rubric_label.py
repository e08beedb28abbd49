"""The rubric label scorer: grade the output against your own rubric, choosing one of your
labels. (scorewatch's own classifier; the reference system's `rubric-scorer` is the checklist
gate in `scorewatch.scorers.rubric`.)

One judge call: a classifier. The judge reads the rubric, the user's message (unless
`include_input=False`) and the output, and picks exactly one label of `choices`; the schema
sent to the judge enumerates the labels, so any other answer is a format failure (one fallback
call, as for every structured step).

1. analyze (judge): `{"choice": <label>, "reason": str}`;
2. generate_score (function): the score `choices` maps the label to;
3. generate_reason (function): "<label>: <the judge's reason>" - no extra call.

`choices` maps labels to scores (default `{"pass": 1, "fail": 0}`); `scale` is the highest
choice score, so the range is min..max of the choices. When every choice has its own score,
the choices are the scorer's `categories`: people label its runs with a choice (`verdict`) and
agreement compares the judge's choice with theirs. Choices that share a score declare no
categories (the judge's choice could not be read back from its stored score). `direction`
defaults to higher is better. An empty output is still graded: whether it meets the rubric is
the rubric's call. Routing marker of the analyze prompt: `Grade the output against the rubric`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..core import PromptStep, Scorer, StepContext
from ..core.scorer import Direction
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import field_of, judge, require_scale
from ._text import request_text, response_text
from .utils import format_number

__all__ = ["RUBRIC_LABEL_SCORER_ID", "create_rubric_label_scorer"]

RUBRIC_LABEL_SCORER_ID = "rubric-label-scorer"

INSTRUCTIONS = (
    "You grade outputs against a rubric written by the user. Apply the rubric exactly as "
    "written, nothing more; pick the single label that fits best and say why in one sentence."
)

_CARD = ScorerCard(
    name="rubric-label",
    id=RUBRIC_LABEL_SCORER_ID,
    scorer_name="Rubric Label Scorer",
    description="Grades the output against a user-written rubric by choosing one of the given "
    "labels",
    judge_calls=1,
    instructions=INSTRUCTIONS,
)


def _choice_schema(labels: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "choice": {"type": "string", "enum": labels},
            "reason": {"type": "string"},
        },
        "required": ["choice", "reason"],
        "additionalProperties": False,
    }


@prebuilt(_CARD)
def create_rubric_label_scorer(
    model: str | JudgeModel,
    *,
    rubric: str,
    choices: Mapping[str, float] | None = None,
    include_input: bool = True,
    direction: Direction = "higher_is_better",
    id: str = RUBRIC_LABEL_SCORER_ID,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """A classifier scorer: the judge picks one label of `choices` for the output, per `rubric`.

    One judge call; score = `choices[label]`; range min..max of the choices.
    """
    if not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("create_rubric_label_scorer needs a non-empty rubric")
    table = dict(choices) if choices is not None else {"pass": 1.0, "fail": 0.0}
    if len(table) < 2:
        raise ValueError("choices must offer at least two labels")
    for label, value in table.items():
        if not isinstance(label, str) or not label.strip():
            raise ValueError(f"choice labels must be non-empty strings, got {label!r}")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ValueError(f"choice {label!r} must map to a finite number, got {value!r}")
    labels = list(table)
    if max(table.values()) <= 0:
        raise ValueError("the highest choice score must be positive: it is the scorer's scale")
    scale = require_scale(max(table.values()))
    listed = "\n".join(f"- {label} (score {format_number(table[label])})" for label in labels)

    def analyze_prompt(ctx: StepContext) -> str:
        question = (
            f"User's message:\n{request_text(ctx.run.input) or '(none)'}\n\n"
            if include_input
            else ""
        )
        return f"""Grade the output against the rubric and choose exactly one label.

Rubric:
{rubric.strip()}

Labels:
{listed}

{question}Output:
{response_text(ctx.run.output)}

Format: {{"choice":<one of the labels>,"reason":str}}
"""

    def score(ctx: StepContext) -> float:
        return float(table[str(field_of(ctx.results.analyze_step_result, "choice"))])

    def explain(ctx: StepContext) -> str:
        found = ctx.results.analyze_step_result
        reason = str(field_of(found, "reason") or "").strip() or "no reason given"
        return f"{field_of(found, 'choice')}: {reason}"

    return (
        _CARD.create_scorer(
            judge=judge(model, _CARD.instructions, model_options),
            scale=scale,
            id=id,
            direction=direction,
            categories=table if len(set(table.values())) == len(table) else None,
        )
        .analyze(
            PromptStep(
                description="Grade the output against the rubric",
                create_prompt=analyze_prompt,
                output_schema=_choice_schema(labels),
            )
        )
        .generate_score(score)
        .generate_reason(explain)
    )
