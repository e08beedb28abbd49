"""The faithfulness scorer: are the output's claims supported by the given context?

Three judge calls:

1. preprocess (judge): the output's atomic factual claims;
2. analyze (judge): one verdict per claim against the context: `yes` (supported), `no`
   (contradicted) or `unsure` (the context does not say);
3. generate_score (function): supported claims / claims x `scale`, rounded half up to two
   decimals; verdicts are matched to claims by position, a missing verdict is not support;
   no claims -> 0;
4. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. The context is `context_extractor(input, output)` when given
(sync or async), else `context`, else the results of the tools the agent called. Routing marker
of the analyze prompt: `Judge each claim against the context`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core import PromptStep, Scorer, StepContext, create_scorer
from ..judge.protocol import JudgeModel
from ._judging import (
    VERDICTS_FORMAT,
    ClaimList,
    GradedVerdictList,
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

__all__ = ["FAITHFULNESS_SCORER_ID", "create_faithfulness_scorer", "faithfulness_score"]

FAITHFULNESS_SCORER_ID = "faithfulness-scorer"

INSTRUCTIONS = (
    "You check whether statements are backed by a given context. Use only the context, never "
    "your own knowledge: a claim that is true in the world but absent from the context is "
    "'unsure'. Judge each claim on its own; paraphrase is fine, a changed number, date or name "
    "is not."
)


def _analyze_prompt(claims: Sequence[str], context: Sequence[str]) -> str:
    return f"""Judge each claim against the context. For every claim answer "yes" if the context \
states or directly implies it, "no" if the context contradicts it, "unsure" if the context does \
not say. Exactly one verdict per claim, in order; "item" repeats the claim.

Context:
{numbered(context) if context else "(no context was given)"}

Claims:
{numbered(claims)}

Format: {VERDICTS_FORMAT}
"""


def faithfulness_score(claims: int, verdicts: Sequence[Any], scale: float = 1) -> float:
    """Supported claims (verdict `yes`) / claims x scale, rounded; 0 without claims."""
    if claims == 0:
        return 0.0
    supported = aligned_labels(claims, verdicts).count("yes")
    return round_to_two_decimals(supported / claims * scale)


def create_faithfulness_scorer(
    model: str | JudgeModel,
    *,
    context: Sequence[str] | None = None,
    context_extractor: ContextExtractor | None = None,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Share of the output's claims that the context supports, times `scale`.

    `model`: a litellm model id (`model_options` go to `LiteLLMJudge`) or a `JudgeModel`.
    `context` / `context_extractor`: what the claims are checked against (default: the output's
    tool results). Three judge calls; range 0..scale; higher is better.
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
        return faithfulness_score(len(claims), verdicts, scale)

    def explain_prompt(ctx: StepContext) -> str:
        claims = [str(c) for c in items_of(ctx.results.preprocess_step_result, "claims")]
        labels = aligned_labels(len(claims), items_of(ctx.results.analyze_step_result, "verdicts"))
        unsupported = [
            f"{c} ({label or 'no verdict'})"
            for c, label in zip(claims, labels, strict=True)
            if label != "yes"
        ]
        return reason_prompt(
            subject="faithfulness",
            score=ctx.score,
            scale=scale,
            facts=f"Output:\n{response_text(ctx.run.output)}\n\n"
            f"Claims: {len(claims)}, supported by the context: {labels.count('yes')}\n"
            f"Claims not supported:\n{bullets(unsupported)}",
            empty_note=None
            if claims
            else "The output made no factual claims, so there was nothing to check: score 0.",
        )

    return (
        create_scorer(
            id=FAITHFULNESS_SCORER_ID,
            name="Faithfulness Scorer",
            description="Measures the share of the output's claims that the given context supports",
            judge=judge(model, INSTRUCTIONS, model_options),
            type="agent",
            scale=scale,
            direction="higher_is_better",
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
                description="Judge each claim against the context",
                create_prompt=analyze_prompt,
                output_schema=GradedVerdictList,
            )
        )
        .generate_score(score)
        .generate_reason(
            PromptStep(description="Explain the faithfulness score", create_prompt=explain_prompt)
        )
    )
