"""The faithfulness scorer: are the output's claims supported by the given context?

Three judge calls:

1. preprocess (judge): the output's atomic factual claims;
2. analyze (judge): one verdict per claim against the context: `yes` (supported), `no`
   (contradicted) or `unsure` (the context does not say);
3. generate_score (function): `yes` verdicts / verdicts returned x `scale`, rounded half up to
   two decimals; no verdicts -> 0 (the reference system's formula);
4. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. The context is `context_extractor(input, output)` when given
(sync or async), else `context`, else the results of the tools the agent called. Routing marker
of the analyze prompt: `Judge each claim against the context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from ..core import Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._context_options import ContextOptions, ContextSettings
from ._judging import bullets, numbered
from ._text import response_text
from ._verdicts import (
    VERDICTS_FORMAT,
    ItemVerdicts,
    VerdictList,
    context_claims_scorer,
    verdict_share,
)

__all__ = ["FAITHFULNESS_SCORER_ID", "create_faithfulness_scorer", "faithfulness_score"]

FAITHFULNESS_SCORER_ID = "faithfulness-scorer"

INSTRUCTIONS = (
    "You check whether statements are backed by a given context. Use only the context, never "
    "your own knowledge: a claim that is true in the world but absent from the context is "
    "'unsure'. Judge each claim on its own; paraphrase is fine, a changed number, date or name "
    "is not."
)

_CARD = ScorerCard(
    name="faithfulness",
    id=FAITHFULNESS_SCORER_ID,
    scorer_name="Faithfulness Scorer",
    description="Measures the share of the output's claims that the given context supports",
    judge_calls=3,
    instructions=INSTRUCTIONS,
    subject="faithfulness",
)


def _analyze_prompt(claims: Sequence[str], context: Sequence[str]) -> str:
    return f"""Judge each claim against the context. For every claim answer "yes" if the context \
states or directly implies it, "no" if the context contradicts it, "unsure" if the context does \
not say. Exactly one verdict per claim, in the order of the claims.

Context:
{numbered(context) if context else "(no context was given)"}

Claims:
{numbered(claims)}

Format: {VERDICTS_FORMAT}
"""


def faithfulness_score(verdicts: Sequence[Any], scale: float = 1) -> float:
    """`yes` verdicts / verdicts x scale, rounded; 0 without verdicts."""
    return verdict_share(verdicts, scale)


def _facts(ctx: StepContext, judged: ItemVerdicts) -> str:
    return (
        f"Output:\n{response_text(ctx.run.output)}\n\n"
        f"Claims: {len(judged.items)}, verdicts: {len(judged.labels)}, supported by the "
        f"context: {judged.count('yes')}\n"
        f"Claims not supported:\n{bullets(judged.others('yes'))}"
    )


@prebuilt(_CARD)
def create_faithfulness_scorer(
    model: str | JudgeModel,
    **options: Unpack[ContextOptions],
) -> Scorer:
    """Share of the output's claims that the context supports, times `scale`.

    `model`: a litellm model id (`model_options` go to `LiteLLMJudge`) or a `JudgeModel`.
    `context` / `context_extractor`: what the claims are checked against (default: the output's
    tool results). Three judge calls; range 0..scale; higher is better.
    """
    return context_claims_scorer(
        _CARD,
        model,
        ContextSettings.of(options, factory="create_faithfulness_scorer"),
        analyze_description="Judge each claim against the context",
        analyze_prompt=_analyze_prompt,
        verdict_schema=VerdictList,
        score=faithfulness_score,
        facts=_facts,
        no_items_note="The output made no factual claims, so there was nothing to check: score 0.",
    )
