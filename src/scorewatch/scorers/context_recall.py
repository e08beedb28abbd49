"""The context recall scorer: does the retrieved context hold what the expected answer says?

Three judge calls:

1. preprocess (judge): the atomic claims of the run's ground truth (the expected answer),
   `{"claims": [str]}`;
2. analyze (judge): one verdict per claim, `{"verdicts": [{"verdict", "reason"}]}`: `yes` when
   the context supports the claim, `no` otherwise;
3. generate_score (function): min(1, `yes` verdicts / claims) x `scale`, rounded half up to two
   decimals; no ground truth or no claims -> 0 (the reference system's formula and empty
   cases);
4. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. The context is `context_extractor(input, output)` when given
(sync or async), else `context`. Routing marker of the analyze prompt: `Check each claim of the
expected answer against the context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import CONTEXT_OPTIONS, ScorerCard, prebuilt
from ._context_options import ContextOptions, ContextSettings
from ._judging import Reason, bullets, items_of, judged_scorer, numbered
from ._text import as_text
from ._verdicts import (
    VERDICTS_FORMAT,
    ClaimList,
    ItemVerdicts,
    VerdictList,
    claims_prompt,
    label_of,
)
from .utils import round_to_two_decimals

__all__ = ["CONTEXT_RECALL_SCORER_ID", "context_recall_score", "create_context_recall_scorer"]

CONTEXT_RECALL_SCORER_ID = "context-recall-scorer"

INSTRUCTIONS = (
    "You check whether retrieved context covers an expected answer. Use only the context, "
    "never your own knowledge: a claim is supported when the context states it or directly "
    "implies it; paraphrase is fine, a changed number, date or name is not."
)

_CARD = ScorerCard(
    name="context-recall",
    id=CONTEXT_RECALL_SCORER_ID,
    scorer_name="Context Recall Scorer",
    description="Measures the share of the expected answer's claims that the context supports",
    judge_calls=3,
    one_of_options=CONTEXT_OPTIONS,
    instructions=INSTRUCTIONS,
    subject="context recall",
)


def _ground_truth(ctx: StepContext) -> str:
    truth = ctx.run.ground_truth
    return as_text(truth) if truth else ""


def _analyze_prompt(claims: Sequence[str], context: Sequence[str]) -> str:
    return f"""Check each claim of the expected answer against the context: "yes" if the \
context states or directly implies it, "no" otherwise. Exactly one verdict per claim, in the \
order of the claims.

Context:
{numbered(context) if context else "(no context was given)"}

Claims:
{numbered(claims)}

Format: {VERDICTS_FORMAT}
"""


def context_recall_score(claims: int, verdicts: Sequence[Any], scale: float = 1) -> float:
    """min(1, `yes` verdicts / claims) x scale, rounded; 0 without claims."""
    if claims == 0:
        return 0
    supported = sum(1 for verdict in verdicts if label_of(verdict) == "yes")
    return round_to_two_decimals(min(1, supported / claims) * scale)


@prebuilt(_CARD)
def create_context_recall_scorer(
    model: str | JudgeModel,
    **options: Unpack[ContextOptions],
) -> Scorer:
    """Share of the ground truth's claims that the context supports, times `scale`.

    Needs `context=[...]` or `context_extractor=`; the run's `ground_truth` is the expected
    answer (without one the score is 0). Three judge calls; range 0..scale; higher is better.
    """
    settings = ContextSettings.of(options, factory="create_context_recall_scorer")
    scale, model_options = settings.scale, settings.model_options
    pieces_of = settings.required_pieces("the context recall scorer")

    def claims_of(ctx: StepContext) -> list[str]:
        return [str(claim) for claim in items_of(ctx.results.preprocess_step_result, "claims")]

    async def analyze_prompt(ctx: StepContext) -> str:
        return _analyze_prompt(claims_of(ctx), await pieces_of(ctx))

    def score(ctx: StepContext) -> float:
        if not ctx.run.ground_truth:
            return 0
        verdicts = items_of(ctx.results.analyze_step_result, "verdicts")
        return context_recall_score(len(claims_of(ctx)), verdicts, scale)

    def explain(ctx: StepContext) -> Reason:
        judged = ItemVerdicts.of(ctx, "claims", "verdicts", "verdict")
        note = None
        if not ctx.run.ground_truth:
            note = "The run had no ground truth to recall, so the score is 0."
        elif not judged.items:
            note = "The expected answer had no claims to check, so the score is 0."
        return Reason(
            facts=f"Expected answer:\n{_ground_truth(ctx)}\n\n"
            f"Claims: {len(judged.items)}, supported by the context: {judged.count('yes')}\n"
            f"Claims not supported:\n{bullets(judged.others('yes'))}",
            empty_note=note,
        )

    preprocess = PromptStep(
        description="Extract the claims of the expected answer",
        create_prompt=lambda ctx: claims_prompt(_ground_truth(ctx), "expected answer"),
        output_schema=ClaimList,
    )
    analyze = PromptStep(
        description="Check each claim of the expected answer against the context",
        create_prompt=analyze_prompt,
        output_schema=VerdictList,
    )
    return judged_scorer(
        _CARD, model, model_options, scale, analyze, score, explain, preprocess=preprocess
    )
