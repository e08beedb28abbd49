"""The context-relevance scorer: was the context given to the agent relevant, and was it used?

Two judge calls:

1. preprocess (function): the context pieces, resolved once per run;
2. analyze (judge): for each piece, by index, its relevance to the user's message (`high`,
   `medium`, `low`, `none`) and whether the response used it; plus the information the response
   needed that the context lacked (`missing_context`);
3. generate_score (function):
   `max(0, mean relevance weight - unused_high_relevance_penalty x unused high pieces
    - min(missing_context_penalty x missing items, max_missing_context_penalty))`, times
   `scale`, rounded half up to two decimals. Weights: high 1, medium 0.7, low 0.3, none 0; a
   piece without an evaluation weighs 0. No context -> 0;
4. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. The context is `context_extractor(input, output)` when given
(sync or async), else `context` (one of them is required). Routing marker of the analyze prompt:
`Rate each context piece's relevance`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._judging import (
    JudgeAnswer,
    Reason,
    ScorerCard,
    bullets,
    check_context_options,
    context_pieces,
    context_step,
    field_of,
    items_of,
    judged_scorer,
    numbered,
    one_of,
    require_scale,
)
from ._text import ContextExtractor, request_text, response_text
from ._verdicts import by_index, label_of, weight_of
from .utils import round_to_two_decimals

__all__ = [
    "CONTEXT_RELEVANCE_SCORER_ID",
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
    id=CONTEXT_RELEVANCE_SCORER_ID,
    name="Context Relevance Scorer",
    description="Measures how relevant the given context was to the user's message and "
    "whether the response used it",
    instructions=INSTRUCTIONS,
    subject="context relevance",
)


class PieceEvaluation(JudgeAnswer):
    context_index: int
    relevance: str = one_of("high", "medium", "low", "none")
    was_used: bool
    reason: str = ""


class ContextEvaluation(JudgeAnswer):
    evaluations: list[PieceEvaluation]
    missing_context: list[str] = Field(default_factory=list)


def context_relevance_score(
    pieces: int,
    evaluations: Sequence[Any],
    missing: int,
    *,
    unused_high_relevance_penalty: float = 0.1,
    missing_context_penalty: float = 0.15,
    max_missing_context_penalty: float = 0.5,
    scale: float = 1,
) -> float:
    """The relevance score (see the module docstring); 0 without context pieces."""
    if pieces == 0:
        return 0.0
    evaluated = by_index(pieces, evaluations)
    weights = [weight_of(e, "relevance", RELEVANCE_WEIGHTS) for e in evaluated]
    unused_high = sum(
        1
        for e in evaluated
        if label_of(e, "relevance") == "high" and field_of(e, "was_used") is not True
    )
    value = sum(weights) / pieces
    value -= unused_high * unused_high_relevance_penalty
    value -= min(missing * missing_context_penalty, max_missing_context_penalty)
    return round_to_two_decimals(max(0.0, value) * scale)


def _analyze_prompt(question: str, response: str, context: Sequence[str]) -> str:
    return f"""Rate each context piece's relevance to the user's message: "high" (directly \
answers it), "medium" (useful background), "low" (barely related) or "none". Say whether the \
response used the piece ("was_used"). Then list in "missing_context" the information the \
response needed that no piece provided (empty if none). One evaluation per piece, with its \
"context_index".

User's message:
{question or "(none)"}

Response:
{response}

Context pieces:
{numbered(context) if context else "(no context was given: return empty lists)"}

Format: {{"evaluations":[{{"context_index":int,"relevance":str,"was_used":bool,"reason":str}}],\
"missing_context":[str]}}
"""


def create_context_relevance_scorer(
    model: str | JudgeModel,
    *,
    context: Sequence[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    unused_high_relevance_penalty: float = 0.1,
    missing_context_penalty: float = 0.15,
    max_missing_context_penalty: float = 0.5,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Relevance of the context to the user's message, with penalties for relevant pieces the
    response ignored and for missing information. Two judge calls; range 0..scale; higher is
    better.
    """
    require_scale(scale)
    check_context_options(context, context_extractor, "the context relevance scorer")

    def analyze_prompt(ctx: StepContext) -> str:
        return _analyze_prompt(
            request_text(ctx.run.input), response_text(ctx.run.output), context_pieces(ctx)
        )

    def score(ctx: StepContext) -> float:
        evaluation = ctx.results.analyze_step_result
        return context_relevance_score(
            len(context_pieces(ctx)),
            items_of(evaluation, "evaluations"),
            len(items_of(evaluation, "missing_context")),
            unused_high_relevance_penalty=unused_high_relevance_penalty,
            missing_context_penalty=missing_context_penalty,
            max_missing_context_penalty=max_missing_context_penalty,
            scale=scale,
        )

    def explain(ctx: StepContext) -> Reason:
        pieces = context_pieces(ctx)
        evaluation = ctx.results.analyze_step_result
        evaluated = by_index(len(pieces), items_of(evaluation, "evaluations"))
        lines = [
            f"[{i}] relevance {label_of(e, 'relevance') or 'not rated'}, "
            f"{'used' if field_of(e, 'was_used') is True else 'not used'}: {piece}"
            for i, (piece, e) in enumerate(zip(pieces, evaluated, strict=True))
        ]
        missing = [str(m) for m in items_of(evaluation, "missing_context")]
        return Reason(
            facts=f"User's message:\n{request_text(ctx.run.input)}\n\nContext pieces:\n"
            f"{chr(10).join(lines) or '(none)'}\nMissing information:\n{bullets(missing)}",
            empty_note=None if pieces else "No context was given, so the score is 0.",
        )

    return judged_scorer(
        _CARD,
        model=model,
        model_options=model_options,
        scale=scale,
        preprocess=context_step(context, context_extractor),
        analyze=PromptStep(
            description="Rate each context piece's relevance and use",
            create_prompt=analyze_prompt,
            output_schema=ContextEvaluation,
        ),
        score=score,
        explain=explain,
    )
