"""The context-relevance scorer: was the context given to the agent relevant, and was it used?

Two judge calls:

1. analyze (judge): the reference system's shape, `{"evaluations": [{"context_index",
   "contextPiece", "relevanceLevel" (high | medium | low | none), "wasUsed", "reasoning"}],
   "missingContext": [str], "overallAssessment"}`;
2. generate_score (function), the reference system's formula:
   `max(0, mean relevance weight of the evaluations - unused_high_relevance_context x unused
   high pieces - min(missing_context_per_item x missing items, max_missing_context_penalty))`
   x `scale`, rounded half up to two decimals. Weights: high 1, medium 0.7, low 0.3, none 0.
   No context at all -> `scale`; no evaluations -> 0 when the judge names missing context,
   else 1 (unscaled, as the reference);
3. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. The context is `context_extractor(input, output)` when given
(sync or async), else `context` (one of them is required). Routing marker of the analyze prompt:
`Rate each context piece's relevance`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from pydantic import Field
from pydantic.alias_generators import to_snake

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import CONTEXT_OPTIONS, ScorerCard, prebuilt
from ._context_options import ContextOptions, ContextSettings
from ._judging import (
    JudgeAnswer,
    Reason,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    numbered,
    one_of,
)
from ._text import request_text, response_text
from ._verdicts import label_of, weight_of
from .utils import round_to_two_decimals

__all__ = [
    "CONTEXT_RELEVANCE_SCORER_ID",
    "DEFAULT_PENALTIES",
    "RELEVANCE_WEIGHTS",
    "context_relevance_score",
    "create_context_relevance_scorer",
]

CONTEXT_RELEVANCE_SCORER_ID = "context-relevance-scorer"
RELEVANCE_WEIGHTS: Mapping[str, float] = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}

INSTRUCTIONS = (
    "You judge the context an agent was given: how relevant each piece is to the user's "
    "message, whether the response used it, and what needed information was missing. Judge "
    "from the texts given only."
)

_CARD = ScorerCard(
    name="context-relevance",
    id=CONTEXT_RELEVANCE_SCORER_ID,
    scorer_name="Context Relevance (LLM)",
    description="Measures how relevant the given context was to the user's message and "
    "whether the response used it",
    judge_calls=2,
    one_of_options=CONTEXT_OPTIONS,
    instructions=INSTRUCTIONS,
    subject="context relevance",
)


class PieceEvaluation(JudgeAnswer):
    context_index: int | float
    contextPiece: str = ""
    relevanceLevel: str = one_of("high", "medium", "low", "none")
    wasUsed: bool
    reasoning: str = ""


class ContextEvaluation(JudgeAnswer):
    evaluations: list[PieceEvaluation]
    missingContext: list[str] = Field(default_factory=list)
    overallAssessment: str = ""


DEFAULT_PENALTIES: Mapping[str, float] = {
    "unused_high_relevance_context": 0.1,
    "missing_context_per_item": 0.15,
    "max_missing_context_penalty": 0.5,
}


def _penalties(given: Mapping[str, float] | None) -> dict[str, float]:
    """The penalty rates, reference camelCase keys accepted (`unusedHighRelevanceContext`)."""
    rates = dict(DEFAULT_PENALTIES)
    for key, value in (given or {}).items():
        name = to_snake(key)
        if name not in rates:
            raise ValueError(f"unknown penalty {key!r}; known: {', '.join(rates)}")
        rates[name] = float(value)
    return rates


def context_relevance_score(
    evaluations: Sequence[Any],
    missing: int,
    penalties: Mapping[str, float] | None = None,
    scale: float = 1,
) -> float:
    """The relevance score of the judge's evaluations (see the module docstring)."""
    if not evaluations:
        return 0 if missing > 0 else 1
    rates = _penalties(penalties)
    weights = [weight_of(e, "relevanceLevel", RELEVANCE_WEIGHTS) for e in evaluations]
    unused_high = sum(
        1
        for e in evaluations
        if label_of(e, "relevanceLevel") == "high" and field_of(e, "wasUsed") is not True
    )
    value = sum(weights) / len(evaluations)
    value -= unused_high * rates["unused_high_relevance_context"]
    value -= min(missing * rates["missing_context_per_item"], rates["max_missing_context_penalty"])
    return round_to_two_decimals(max(0, value) * scale)


def _analyze_prompt(question: str, response: str, context: Sequence[str]) -> str:
    return f"""Rate each context piece's relevance to the user's message: "high" (directly \
answers it), "medium" (useful background), "low" (barely related) or "none". Say whether the \
response used the piece ("wasUsed"). Then list in "missingContext" the information the \
response needed that no piece provided (empty if none), and sum up in "overallAssessment". One \
evaluation per piece, with its "context_index" and the piece in "contextPiece".

User's message:
{question or "(none)"}

Response:
{response}

Context pieces:
{numbered(context) if context else "[0] (no context was given)"}

Format: {{"evaluations":[{{"context_index":int,"contextPiece":str,"relevanceLevel":str,\
"wasUsed":bool,"reasoning":str}}],"missingContext":[str],"overallAssessment":str}}
"""


class ContextRelevanceOptions(ContextOptions, total=False):
    """The context relevance scorer's keywords: the shared ones and its penalty rates."""

    penalties: Mapping[str, float] | None
    """Overrides of the penalty rates (snake_case or the reference's camelCase keys)."""


@prebuilt(_CARD)
def create_context_relevance_scorer(
    model: str | JudgeModel,
    **options: Unpack[ContextRelevanceOptions],
) -> Scorer:
    """Relevance of the context to the user's message, with penalties for relevant pieces the
    response ignored and for missing information. `penalties` overrides the rates
    (`unused_high_relevance_context` 0.1, `missing_context_per_item` 0.15,
    `max_missing_context_penalty` 0.5; the reference's camelCase keys work too). Two judge
    calls; range 0..scale; higher is better.
    """
    settings = ContextSettings.of(
        options, factory="create_context_relevance_scorer", extra=("penalties",)
    )
    scale, model_options = settings.scale, settings.model_options
    pieces_of = settings.required_pieces("the context relevance scorer")
    rates = _penalties(options.get("penalties"))

    async def analyze_prompt(ctx: StepContext) -> str:
        return _analyze_prompt(
            request_text(ctx.run.input), response_text(ctx.run.output), await pieces_of(ctx)
        )

    async def score(ctx: StepContext) -> float:
        if not await pieces_of(ctx):
            return 1 * scale
        evaluation = ctx.results.analyze_step_result
        return context_relevance_score(
            items_of(evaluation, "evaluations"),
            len(items_of(evaluation, "missingContext")),
            rates,
            scale,
        )

    async def explain(ctx: StepContext) -> Reason:
        pieces = await pieces_of(ctx)
        evaluation = ctx.results.analyze_step_result
        lines = [
            f"[{field_of(e, 'context_index')}] relevance "
            f"{label_of(e, 'relevanceLevel') or 'not rated'}, "
            f"{'used' if field_of(e, 'wasUsed') is True else 'not used'}: "
            f"{field_of(e, 'contextPiece')}"
            for e in items_of(evaluation, "evaluations")
        ]
        missing = [str(m) for m in items_of(evaluation, "missingContext")]
        return Reason(
            facts=f"User's message:\n{request_text(ctx.run.input)}\n\nContext pieces:\n"
            f"{chr(10).join(lines) or '(none)'}\nMissing information:\n{bullets(missing)}",
            empty_note=None if pieces else "No context was given, so the score is the maximum.",
        )

    analyze = PromptStep(
        description="Rate each context piece's relevance and use",
        create_prompt=analyze_prompt,
        output_schema=ContextEvaluation,
    )
    return judged_scorer(_CARD, model, model_options, scale, analyze, score, explain)
