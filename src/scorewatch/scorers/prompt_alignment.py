"""The prompt-alignment scorer: does the response do what the prompt asked, the way it asked?

Two judge calls:

1. analyze (judge): the prompt's primary intent and whether the response addresses it (`yes`,
   `partly`, `no`); the prompt's explicit requirements (instructions, constraints, requested
   format, length, language), each tagged with its source (`user` or `system`) and judged
   `yes` / `partly` / `no`; whether the response's format and tone fit the prompt;
2. generate_score (function): `0.4 x intent + 0.4 x requirements + 0.2 x appropriateness`,
   times `scale`, rounded half up to two decimals, where yes = 1, partly = 0.5, no = 0;
   requirements is their mean (in `both` mode: 0.7 x the user requirements' mean + 0.3 x the
   system requirements' mean when both kinds exist); without requirements that part takes the
   intent value; appropriateness is the mean of format-fits and tone-fits. Nothing to judge (no
   response, or no prompt for the mode) -> 0;
3. generate_reason (judge): a short explanation.

`evaluation_mode`: `user` (the user's message), `system` (the system prompt(s)) or `both`
(default). Range 0..scale, higher is better. Routing marker of the analyze prompt: `Check how
well the response follows the prompt`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._judging import (
    JudgeAnswer,
    Reason,
    ScorerCard,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    one_of,
    require_scale,
)
from ._text import request_text, response_text
from ._verdicts import label_of, weight_of
from .utils import get_combined_system_prompt, round_to_two_decimals

__all__ = [
    "PROMPT_ALIGNMENT_SCORER_ID",
    "EvaluationMode",
    "create_prompt_alignment_scorer",
    "prompt_alignment_score",
]

PROMPT_ALIGNMENT_SCORER_ID = "prompt-alignment-scorer"
EvaluationMode = Literal["user", "system", "both"]
_CREDIT = {"yes": 1.0, "partly": 0.5, "partial": 0.5, "no": 0.0}

INSTRUCTIONS = (
    "You check whether a response follows its prompt: the intent behind it, every explicit "
    "instruction and constraint, and the requested format and tone. Judge what the response "
    "does, not whether its facts are true."
)

_CARD = ScorerCard(
    id=PROMPT_ALIGNMENT_SCORER_ID,
    name="Prompt Alignment Scorer",
    description="Measures how well the response follows the intent, requirements, "
    "format and tone of its prompt",
    instructions=INSTRUCTIONS,
    subject="prompt alignment",
)


class IntentCheck(JudgeAnswer):
    primary_intent: str
    addressed: str = one_of("yes", "partly", "no")
    reason: str = ""


class RequirementCheck(JudgeAnswer):
    requirement: str
    source: str = one_of("user", "system", default="user")
    fulfilled: str = one_of("yes", "partly", "no")
    reason: str = ""


class AlignmentAnalysis(JudgeAnswer):
    intent: IntentCheck
    requirements: list[RequirementCheck]
    format_fits: bool
    tone_fits: bool
    assessment: str = ""


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def prompt_alignment_score(analysis: Any, mode: EvaluationMode = "both", scale: float = 1) -> float:
    """The weighted alignment score of an analysis (see the module docstring)."""
    if not isinstance(analysis, Mapping):
        return 0.0
    intent = weight_of(field_of(analysis, "intent"), "addressed", _CREDIT)
    credits: dict[str, list[float]] = {"user": [], "system": []}
    for requirement in items_of(analysis, "requirements"):
        source = "system" if label_of(requirement, "source") == "system" else "user"
        credits[source].append(weight_of(requirement, "fulfilled", _CREDIT))
    user, system = _mean(credits["user"]), _mean(credits["system"])
    if mode == "both" and user is not None and system is not None:
        requirements = 0.7 * user + 0.3 * system
    else:
        pooled = _mean(credits["user"] + credits["system"])
        requirements = intent if pooled is None else pooled
    fits = [field_of(analysis, "format_fits") is True, field_of(analysis, "tone_fits") is True]
    appropriateness = sum(fits) / 2
    value = 0.4 * intent + 0.4 * requirements + 0.2 * appropriateness
    return round_to_two_decimals(value * scale)


def _analyze_prompt(
    mode: EvaluationMode, user_prompt: str, system_prompt: str, response: str
) -> str:
    parts = []
    if mode in ("system", "both"):
        parts.append(f"System prompt:\n{system_prompt or '(none)'}")
    if mode in ("user", "both"):
        parts.append(f"User's message:\n{user_prompt or '(none)'}")
    judged = {"user": "the user's message", "system": "the system prompt", "both": "both prompts"}
    return f"""Check how well the response follows the prompt ({judged[mode]}).
"intent": the prompt's primary intent and whether the response addresses it ("yes", "partly", \
"no"). "requirements": every explicit instruction or constraint (content, format, length, \
language, style), with "source" ("user" or "system") and "fulfilled" ("yes", "partly", "no"); \
an empty list if there are none. "format_fits" / "tone_fits": whether the response's format and \
tone suit the prompt.

{chr(10).join(parts)}

Response:
{response}

Format: {{"intent":{{"primary_intent":str,"addressed":str,"reason":str}},"requirements":\
[{{"requirement":str,"source":str,"fulfilled":str,"reason":str}}],"format_fits":bool,\
"tone_fits":bool,"assessment":str}}
"""


def create_prompt_alignment_scorer(
    model: str | JudgeModel,
    *,
    evaluation_mode: EvaluationMode = "both",
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """How well the response follows the user's message and/or the system prompt.

    Two judge calls; range 0..scale; higher is better.
    """
    require_scale(scale)
    if evaluation_mode not in ("user", "system", "both"):
        raise ValueError(f"evaluation_mode must be user, system or both, not {evaluation_mode!r}")

    def prompts_of(ctx: StepContext) -> tuple[str, str]:
        return request_text(ctx.run.input), get_combined_system_prompt(ctx.run.input)

    def nothing_to_judge(ctx: StepContext) -> str | None:
        user, system = prompts_of(ctx)
        if not response_text(ctx.run.output).strip():
            return "The response was empty, so the score is 0."
        wanted = {"user": user, "system": system, "both": user + system}[evaluation_mode]
        if not wanted.strip():
            return f"There was no prompt to align with ({evaluation_mode} mode), so the score is 0."
        return None

    def analyze_prompt(ctx: StepContext) -> str:
        user, system = prompts_of(ctx)
        return _analyze_prompt(evaluation_mode, user, system, response_text(ctx.run.output))

    def score(ctx: StepContext) -> float:
        return prompt_alignment_score(ctx.results.analyze_step_result, evaluation_mode, scale)

    def explain(ctx: StepContext) -> Reason:
        analysis = ctx.results.analyze_step_result
        intent = field_of(analysis, "intent")
        unmet = [
            f"{field_of(r, 'requirement')} ({label_of(r, 'fulfilled') or 'not judged'})"
            for r in items_of(analysis, "requirements")
            if label_of(r, "fulfilled") != "yes"
        ]
        return Reason(
            facts=f"Primary intent: {field_of(intent, 'primary_intent')} "
            f"(addressed: {label_of(intent, 'addressed') or 'not judged'})\n"
            f"Requirements not fully met:\n{bullets(unmet)}\n"
            f"Format fits: {field_of(analysis, 'format_fits') is True}, "
            f"tone fits: {field_of(analysis, 'tone_fits') is True}\n"
            "(Weights: intent 0.4, requirements 0.4, format and tone 0.2.)",
        )

    return judged_scorer(
        _CARD,
        model=model,
        model_options=model_options,
        scale=scale,
        analyze=PromptStep(
            description="Check how well the response follows the prompt",
            create_prompt=analyze_prompt,
            output_schema=AlignmentAnalysis,
        ),
        score=score,
        explain=explain,
        nothing_to_judge=nothing_to_judge,
    )
