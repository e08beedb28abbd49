"""The hallucination scorer: how many of the output's claims are not backed by the context?

Three judge calls:

1. preprocess (judge): the output's atomic factual claims;
2. analyze (judge): one verdict per claim: `yes` (hallucinated: it contradicts the context, or
   asserts a specific fact - a name, number, date or event - the context does not contain) or
   `no` (supported, or a harmless generality);
3. generate_score (function): hallucinated claims / claims x `scale`, rounded half up to two
   decimals; verdicts are matched to claims by position, a missing verdict is not a
   hallucination; no claims -> 0;
4. generate_reason (judge): a short explanation.

Range 0..scale, LOWER is better (`direction="lower_is_better"`). The context is
`context_extractor(input, output)` when given (sync or async), else `context`, else the results
of the tools the agent called. Routing marker of the analyze prompt: `Find the hallucinated
claims`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core import PromptStep, Scorer, StepContext, create_scorer
from ..judge.protocol import JudgeModel
from ._judging import (
    VERDICTS_FORMAT,
    ClaimList,
    VerdictList,
    aligned_labels,
    bullets,
    claims_prompt,
    items_of,
    judge,
    numbered,
    reason_prompt,
    require_scale,
)
from ._text import ContextExtractor, resolve_context, response_text
from .utils import round_to_two_decimals

__all__ = ["HALLUCINATION_SCORER_ID", "create_hallucination_scorer", "hallucination_score"]

HALLUCINATION_SCORER_ID = "hallucination-scorer"

INSTRUCTIONS = (
    "You detect hallucinations: claims an answer makes that its context does not back. Use only "
    "the context, never your own knowledge. Judge each claim on its own; paraphrase is fine, a "
    "changed or invented number, date, name or event is a hallucination."
)


def _analyze_prompt(claims: Sequence[str], context: Sequence[str]) -> str:
    return f"""Find the hallucinated claims. For every claim answer "yes" if it contradicts the \
context or asserts a specific fact (name, number, date, event) the context does not contain; \
answer "no" if the context supports it or it is a harmless generality. Exactly one verdict per \
claim, in order; "item" repeats the claim.

Context:
{numbered(context) if context else "(no context was given)"}

Claims:
{numbered(claims)}

Format: {VERDICTS_FORMAT}
"""


def hallucination_score(claims: int, verdicts: Sequence[Any], scale: float = 1) -> float:
    """Hallucinated claims (verdict `yes`) / claims x scale, rounded; 0 without claims."""
    if claims == 0:
        return 0.0
    hallucinated = aligned_labels(claims, verdicts).count("yes")
    return round_to_two_decimals(hallucinated / claims * scale)


def create_hallucination_scorer(
    model: str | JudgeModel,
    *,
    context: Sequence[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Share of the output's claims that the context does not back, times `scale`.

    Three judge calls; range 0..scale; lower is better. `context` / `context_extractor`: what
    the claims are checked against (default: the output's tool results).
    """
    require_scale(scale)

    async def analyze_prompt(ctx: StepContext) -> str:
        pieces = await resolve_context(
            ctx.run.input, ctx.run.output, context, context_extractor, from_tools=True
        )
        return _analyze_prompt(items_of(ctx.results.preprocess_step_result, "claims"), pieces)

    def score(ctx: StepContext) -> float:
        claims = items_of(ctx.results.preprocess_step_result, "claims")
        verdicts = items_of(ctx.results.analyze_step_result, "verdicts")
        return hallucination_score(len(claims), verdicts, scale)

    def explain_prompt(ctx: StepContext) -> str:
        claims = [str(c) for c in items_of(ctx.results.preprocess_step_result, "claims")]
        labels = aligned_labels(len(claims), items_of(ctx.results.analyze_step_result, "verdicts"))
        flagged = [c for c, label in zip(claims, labels, strict=True) if label == "yes"]
        return reason_prompt(
            subject="hallucination",
            score=ctx.score,
            scale=scale,
            facts=f"Output:\n{response_text(ctx.run.output)}\n\n"
            f"Claims: {len(claims)}, hallucinated: {len(flagged)} (a higher score is worse)\n"
            f"Hallucinated claims:\n{bullets(flagged)}",
            empty_note=None
            if claims
            else "The output made no factual claims, so nothing could be hallucinated: score 0.",
        )

    return (
        create_scorer(
            id=HALLUCINATION_SCORER_ID,
            name="Hallucination Scorer",
            description="Measures the share of the output's claims that the context does not "
            "back (lower is better)",
            judge=judge(model, INSTRUCTIONS, model_options),
            type="agent",
            scale=scale,
            direction="lower_is_better",
        )
        .preprocess(
            PromptStep(
                description="Extract the factual claims of the output",
                create_prompt=lambda ctx: claims_prompt(response_text(ctx.run.output)),
                output_schema=ClaimList,
            )
        )
        .analyze(
            PromptStep(
                description="Find the claims the context does not back",
                create_prompt=analyze_prompt,
                output_schema=VerdictList,
            )
        )
        .generate_score(score)
        .generate_reason(
            PromptStep(description="Explain the hallucination score", create_prompt=explain_prompt)
        )
    )
