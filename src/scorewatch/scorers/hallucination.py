"""The hallucination scorer: how many of the output's claims are not backed by the context?

Three judge calls:

1. preprocess (judge): the output's atomic factual claims;
2. analyze (judge): one verdict per claim: `yes` (hallucinated: it contradicts the context, or
   asserts a specific fact - a name, number, date or event - the context does not contain) or
   `no` (supported, or a harmless generality);
3. generate_score (function): `yes` verdicts / verdicts returned x `scale`, rounded half up to
   two decimals; no verdicts -> 0 (the reference system's formula);
4. generate_reason (judge): a short explanation.

Range 0..scale, LOWER is better (`direction="lower_is_better"`). The context is
`context_extractor(input, output)` when given (sync or async), else `context`, else none (as
the reference system: the output's tool results are not used here). Routing marker of the
analyze prompt: `Find the hallucinated claims`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from ..core import Scorer
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._context_options import ContextOptions, ContextSettings
from ._judging import JudgeAnswer, numbered
from ._verdicts import (
    context_claims_scorer,
    flagged_items_facts,
    verdict_share,
)

__all__ = ["HALLUCINATION_SCORER_ID", "create_hallucination_scorer", "hallucination_score"]

HALLUCINATION_SCORER_ID = "hallucination-scorer"


class StatementVerdict(JudgeAnswer):
    statement: str = ""
    verdict: str
    reason: str = ""


class StatementVerdictList(JudgeAnswer):
    verdicts: list[StatementVerdict]


INSTRUCTIONS = (
    "You detect hallucinations: claims an answer makes that its context does not back. Use only "
    "the context, never your own knowledge. Judge each claim on its own; paraphrase is fine, a "
    "changed or invented number, date, name or event is a hallucination."
)

_CARD = ScorerCard(
    name="hallucination",
    id=HALLUCINATION_SCORER_ID,
    scorer_name="Hallucination Scorer",
    description="Measures the share of the output's claims that the context does not "
    "back (lower is better)",
    judge_calls=3,
    instructions=INSTRUCTIONS,
    subject="hallucination",
    direction="lower_is_better",
)


def _analyze_prompt(claims: Sequence[str], context: Sequence[str]) -> str:
    return f"""Find the hallucinated claims. For every claim answer "yes" if it contradicts the \
context or asserts a specific fact (name, number, date, event) the context does not contain; \
answer "no" if the context supports it or it is a harmless generality. Exactly one verdict per \
claim, in the order of the claims; "statement" repeats the claim.

Context:
{numbered(context) if context else "(no context was given)"}

Claims:
{numbered(claims)}

Format: {{"verdicts":[{{"statement":str,"verdict":str,"reason":str}}]}}
"""


def hallucination_score(verdicts: Sequence[Any], scale: float = 1) -> float:
    """`yes` verdicts (hallucinated) / verdicts x scale, rounded; 0 without verdicts."""
    return verdict_share(verdicts, scale)


@prebuilt(_CARD)
def create_hallucination_scorer(
    model: str | JudgeModel,
    **options: Unpack[ContextOptions],
) -> Scorer:
    """Share of the output's claims that the context does not back, times `scale`.

    Three judge calls; range 0..scale; lower is better. `context` / `context_extractor`: what
    the claims are checked against (default: no context).
    """
    return context_claims_scorer(
        _CARD,
        model,
        ContextSettings.of(options, factory="create_hallucination_scorer"),
        analyze_description="Find the claims the context does not back",
        analyze_prompt=_analyze_prompt,
        verdict_schema=StatementVerdictList,
        score=hallucination_score,
        facts=flagged_items_facts("claims", "hallucinated"),
        no_items_note="The output made no factual claims, so nothing could be hallucinated: "
        "score 0.",
        from_tools=False,
    )
