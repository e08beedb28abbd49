"""The prompt-alignment scorer: does the response do what its prompt asked?

Two judge calls:

1. analyze (judge), the reference system's shape: `{"intentAlignment": {"score",
   "primaryIntent", "isAddressed", "reasoning"}, "requirementsFulfillment": {"requirements":
   [{"requirement", "isFulfilled", "reasoning"}], "overallScore"}, "completeness": {"score",
   "missingElements", "reasoning"}, "responseAppropriateness": {"score", "formatAlignment",
   "toneAlignment", "reasoning"}, "overallAssessment"}`, each sub-score 0..1;
2. generate_score (function), the reference system's weights:
   `user` mode 0.4 intent + 0.3 requirements + 0.2 completeness + 0.1 appropriateness;
   `system` mode 0.35 + 0.35 + 0.15 + 0.15; `both` (default) 0.7 x the user weighting + 0.3 x
   the same (the reference weighs the one analysis twice), times `scale`, rounded half up to
   two decimals;
3. generate_reason (judge): a short explanation.

With `include_conversation_history` the judge also sees the remembered earlier turns of an
agent run. A run without the prompt the mode needs (the user's message, the system prompt,
either for `both`) or without a response fails, as in the reference. Range 0..scale, higher is
better.
Routing marker of the analyze prompt: `Check how well the response follows the prompt`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import JudgeAnswer, Reason, bullets, field_of, items_of, judged_scorer, require_scale
from ._text import request_text, response_text
from .utils import (
    get_combined_system_prompt,
    get_conversation_history_from_run_input,
    round_to_two_decimals,
)

__all__ = [
    "PROMPT_ALIGNMENT_SCORER_ID",
    "SCORING_WEIGHTS",
    "EvaluationMode",
    "create_prompt_alignment_scorer",
    "prompt_alignment_score",
]

PROMPT_ALIGNMENT_SCORER_ID = "prompt-alignment-scorer"
EvaluationMode = Literal["user", "system", "both"]

# (intent, requirements, completeness, appropriateness) per mode, and the `both` blend.
SCORING_WEIGHTS: Mapping[str, tuple[float, float, float, float]] = {
    "user": (0.4, 0.3, 0.2, 0.1),
    "system": (0.35, 0.35, 0.15, 0.15),
}
_BOTH_BLEND = (0.7, 0.3)

INSTRUCTIONS = (
    "You check whether a response follows its prompt: the intent behind it, every explicit "
    "instruction and constraint, and the requested format and tone. Judge what the response "
    "does, not whether its facts are true."
)

_CARD = ScorerCard(
    name="prompt-alignment",
    id=PROMPT_ALIGNMENT_SCORER_ID,
    scorer_name="Prompt Alignment (LLM)",
    description="Measures how well the response follows the intent, requirements, "
    "format and tone of its prompt",
    judge_calls=2,
    instructions=INSTRUCTIONS,
    subject="prompt alignment",
    type=None,
)


class IntentAlignment(JudgeAnswer):
    score: float
    primaryIntent: str = ""
    isAddressed: bool = False
    reasoning: str = ""


class Requirement(JudgeAnswer):
    requirement: str = ""
    isFulfilled: bool = False
    reasoning: str = ""


class RequirementsFulfillment(JudgeAnswer):
    requirements: list[Requirement]
    overallScore: float


class Completeness(JudgeAnswer):
    score: float
    missingElements: list[str]
    reasoning: str = ""


class ResponseAppropriateness(JudgeAnswer):
    score: float
    formatAlignment: bool = False
    toneAlignment: bool = False
    reasoning: str = ""


class AlignmentAnalysis(JudgeAnswer):
    intentAlignment: IntentAlignment
    requirementsFulfillment: RequirementsFulfillment
    completeness: Completeness
    responseAppropriateness: ResponseAppropriateness
    overallAssessment: str = ""


def _number(section: Any, name: str) -> float:
    value = field_of(section, name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"the judge's analysis has no numeric {name}")
    return float(value)


def _history_limit(option: bool | Mapping[str, int]) -> int | None:
    """How many remembered messages to show the judge; None for none."""
    if option is False:
        return None
    if option is True:
        return 10
    unknown = set(option) - {"max_messages", "maxMessages"}
    if unknown:
        raise ValueError(f"include_conversation_history takes max_messages, not {sorted(unknown)}")
    limit = option.get("max_messages", option.get("maxMessages", 10))
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ValueError("include_conversation_history max_messages must be an integer")
    return limit


def prompt_alignment_score(analysis: Any, mode: EvaluationMode = "both", scale: float = 1) -> float:
    """The weighted alignment score of an analysis (see the module docstring); 0 without one."""
    if not isinstance(analysis, Mapping):
        return 0
    parts = (
        _number(field_of(analysis, "intentAlignment"), "score"),
        _number(field_of(analysis, "requirementsFulfillment"), "overallScore"),
        _number(field_of(analysis, "completeness"), "score"),
        _number(field_of(analysis, "responseAppropriateness"), "score"),
    )

    def weighted(weights: tuple[float, float, float, float]) -> float:
        return sum(w * p for w, p in zip(weights, parts, strict=True))

    if mode == "system":
        value = weighted(SCORING_WEIGHTS["system"])
    elif mode == "user":
        value = weighted(SCORING_WEIGHTS["user"])
    else:
        user = weighted(SCORING_WEIGHTS["user"])
        value = user * _BOTH_BLEND[0] + user * _BOTH_BLEND[1]
    return round_to_two_decimals(value * scale)


def _analyze_prompt(
    mode: EvaluationMode, user_prompt: str, system_prompt: str, response: str, history: str | None
) -> str:
    parts = []
    if history:
        parts.append(
            "Earlier turns of the conversation (only to understand what the current message "
            f"refers to; judge the response to the current message alone):\n{history}"
        )
    if mode in ("system", "both"):
        parts.append(f"System prompt:\n{system_prompt or '(none)'}")
    if mode in ("user", "both"):
        parts.append(f"User's message:\n{user_prompt or '(none)'}")
    judged = {"user": "the user's message", "system": "the system prompt", "both": "both prompts"}
    return f"""Check how well the response follows the prompt ({judged[mode]}). Give each part \
a score from 0 to 1.
"intentAlignment": the prompt's primary intent and whether the response addresses it.
"requirementsFulfillment": every explicit instruction or constraint (content, format, length, \
language, style) and whether it is fulfilled, with an overall score.
"completeness": how complete the response is, and what it leaves out.
"responseAppropriateness": whether the response's format and tone suit the prompt.

{chr(10).join(parts)}

Response:
{response}

Format: {{"intentAlignment":{{"score":number,"primaryIntent":str,"isAddressed":bool,\
"reasoning":str}},"requirementsFulfillment":{{"requirements":[{{"requirement":str,\
"isFulfilled":bool,"reasoning":str}}],"overallScore":number}},"completeness":{{"score":number,\
"missingElements":[str],"reasoning":str}},"responseAppropriateness":{{"score":number,\
"formatAlignment":bool,"toneAlignment":bool,"reasoning":str}},"overallAssessment":str}}
"""


@prebuilt(_CARD)
def create_prompt_alignment_scorer(
    model: str | JudgeModel,
    *,
    evaluation_mode: EvaluationMode = "both",
    include_conversation_history: bool | Mapping[str, int] = False,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """How well the response follows the user's message and/or the system prompt.

    `include_conversation_history` (True, or `{"max_messages": N}`, default 10) shows the judge
    the remembered earlier turns of an agent run, so a short reply such as "A" is judged
    against what it answers. Two judge calls; range 0..scale; higher is better.
    """
    require_scale(scale)
    if evaluation_mode not in ("user", "system", "both"):
        raise ValueError(f"evaluation_mode must be user, system or both, not {evaluation_mode!r}")
    max_history = _history_limit(include_conversation_history)

    def history_of(ctx: StepContext) -> str | None:
        if max_history is None:
            return None
        return get_conversation_history_from_run_input(ctx.run.input, max_history)

    def analyze_prompt(ctx: StepContext) -> str:
        user, system = request_text(ctx.run.input), get_combined_system_prompt(ctx.run.input)
        response = response_text(ctx.run.output)
        if evaluation_mode == "user" and not user:
            raise ValueError("prompt alignment in user mode needs the user's message")
        if evaluation_mode == "system" and not system:
            raise ValueError("prompt alignment in system mode needs a system prompt")
        if evaluation_mode == "both" and not user and not system:
            raise ValueError("prompt alignment needs a user message or a system prompt")
        if not response:
            raise ValueError("prompt alignment needs the agent's response")
        return _analyze_prompt(evaluation_mode, user, system, response, history_of(ctx))

    def score(ctx: StepContext) -> float:
        return prompt_alignment_score(ctx.results.analyze_step_result, evaluation_mode, scale)

    def explain(ctx: StepContext) -> Reason:
        analysis = ctx.results.analyze_step_result
        intent = field_of(analysis, "intentAlignment")
        fulfilment = field_of(analysis, "requirementsFulfillment")
        completeness = field_of(analysis, "completeness")
        fit = field_of(analysis, "responseAppropriateness")
        unmet = [
            str(field_of(r, "requirement"))
            for r in items_of(fulfilment, "requirements")
            if field_of(r, "isFulfilled") is not True
        ]
        missing = [str(m) for m in items_of(completeness, "missingElements")]
        return Reason(
            facts=f"Primary intent: {field_of(intent, 'primaryIntent')} (intent score "
            f"{field_of(intent, 'score')})\n"
            f"Requirements score {field_of(fulfilment, 'overallScore')}; not met:\n"
            f"{bullets(unmet)}\n"
            f"Completeness score {field_of(completeness, 'score')}; missing:\n{bullets(missing)}\n"
            f"Appropriateness score {field_of(fit, 'score')} (format fits: "
            f"{field_of(fit, 'formatAlignment') is True}, tone fits: "
            f"{field_of(fit, 'toneAlignment') is True})\n"
            f"(Evaluation mode: {evaluation_mode}.)"
            + (f"\nEarlier turns:\n{history}" if (history := history_of(ctx)) else ""),
        )

    analyze = PromptStep(
        description="Check how well the response follows the prompt",
        create_prompt=analyze_prompt,
        output_schema=AlignmentAnalysis,
    )
    return judged_scorer(_CARD, model, model_options, scale, analyze, score, explain)
