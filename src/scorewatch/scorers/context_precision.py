"""The context-precision scorer: are the useful context pieces ranked first?

Two judge calls:

1. analyze (judge): one verdict per context piece, `{"verdicts": [{"context_index", "verdict",
   "reason"}]}`: `yes` if the piece was useful to arrive at the expected answer (the run's
   `ground_truth` when given, else the output), `no` otherwise;
2. generate_score (function), the reference system's formula: the verdicts sorted by
   `context_index`, then mean average precision over them - for each `yes` verdict at
   position k, the share of `yes` verdicts among the first k, averaged over the `yes`
   verdicts - times `scale`, rounded half up to two decimals. No verdicts or no `yes` -> 0;
3. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. The context is `context_extractor(input, output)` when given
(sync or async), else `context` (one of them is required). Routing marker of the analyze prompt:
`Judge whether each context piece was useful`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from pydantic import model_validator

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import CONTEXT_OPTIONS, ScorerCard, prebuilt
from ._context_options import ContextOptions, ContextSettings
from ._judging import (
    JudgeAnswer,
    Reason,
    items_of,
    judged_scorer,
    numbered,
)
from ._text import as_text, request_text, response_text
from ._verdicts import label_of
from .utils import round_to_two_decimals

__all__ = [
    "CONTEXT_PRECISION_SCORER_ID",
    "context_precision_score",
    "create_context_precision_scorer",
    "ranked_usefulness",
]

CONTEXT_PRECISION_SCORER_ID = "context-precision-scorer"

INSTRUCTIONS = (
    "You judge retrieved context for a question-answering system: was each piece useful to "
    "arrive at the expected answer? A piece is useful when it contains information the answer "
    "relies on; topical but unused pieces are not useful. Judge each piece on its own."
)

_CARD = ScorerCard(
    name="context-precision",
    id=CONTEXT_PRECISION_SCORER_ID,
    scorer_name="Context Precision Scorer",
    description="Measures whether the useful context pieces come first (mean average precision)",
    judge_calls=2,
    one_of_options=CONTEXT_OPTIONS,
    instructions=INSTRUCTIONS,
    subject="context precision",
)


class PieceVerdict(JudgeAnswer):
    context_index: int | float
    verdict: str
    reason: str = ""


class PieceVerdicts(JudgeAnswer):
    verdicts: list[PieceVerdict]

    @model_validator(mode="after")
    def _ranked(self) -> PieceVerdicts:
        # The reference sorts its analyze result by context_index in place; the step result
        # shows the same order.
        self.verdicts.sort(key=lambda verdict: verdict.context_index)
        return self


def _index_of(verdict: Any) -> float:
    index = verdict.get("context_index") if isinstance(verdict, Mapping) else None
    if isinstance(index, int | float) and not isinstance(index, bool):
        return index
    return float("inf")


def ranked_usefulness(verdicts: Sequence[Any]) -> list[bool]:
    """Useful flag per verdict, the verdicts sorted by their `context_index` (stable)."""
    return [label_of(verdict) == "yes" for verdict in sorted(verdicts, key=_index_of)]


def context_precision_score(useful: Sequence[bool], scale: float = 1) -> float:
    """Mean average precision of the ranking, times scale, rounded; 0 without useful pieces."""
    found, total = 0, 0.0
    for position, is_useful in enumerate(useful, start=1):
        if is_useful:
            found += 1
            total += found / position
    return 0 if found == 0 else round_to_two_decimals(total / found * scale)


def _analyze_prompt(question: str, expected: str, context: Sequence[str]) -> str:
    return f"""Judge whether each context piece was useful to arrive at the expected answer. \
For every piece give its "context_index" and "yes" if the expected answer relies on information \
in it, "no" otherwise. One verdict per piece.

Question:
{question or "(none)"}

Expected answer:
{expected}

Context pieces:
{numbered(context) if context else "(no context was given: return an empty list)"}

Format: {{"verdicts":[{{"context_index":int,"verdict":str,"reason":str}}]}}
"""


@prebuilt(_CARD)
def create_context_precision_scorer(
    model: str | JudgeModel,
    **options: Unpack[ContextOptions],
) -> Scorer:
    """Mean average precision of the context ranking, judged against the expected answer.

    Two judge calls; range 0..scale; higher is better.
    """
    settings = ContextSettings.of(options, factory="create_context_precision_scorer")
    scale, model_options = settings.scale, settings.model_options
    pieces_of = settings.required_pieces("the context precision scorer")

    def expected_of(ctx: StepContext) -> str:
        truth = as_text(ctx.run.ground_truth)
        return truth if truth.strip() else response_text(ctx.run.output)

    async def analyze_prompt(ctx: StepContext) -> str:
        pieces = await pieces_of(ctx)
        if not pieces:
            raise ValueError("the context precision scorer has no context to judge for this run")
        return _analyze_prompt(request_text(ctx.run.input), expected_of(ctx), pieces)

    def verdicts_of(ctx: StepContext) -> list[Any]:
        return items_of(ctx.results.analyze_step_result, "verdicts")

    def score(ctx: StepContext) -> float:
        return context_precision_score(ranked_usefulness(verdicts_of(ctx)), scale)

    async def explain(ctx: StepContext) -> Reason:
        pieces = await pieces_of(ctx)
        ranked = sorted(verdicts_of(ctx), key=_index_of)
        ranking = "\n".join(
            f"[{verdict.get('context_index')}] "
            f"{'useful' if label_of(verdict) == 'yes' else 'not useful'}: "
            f"{_piece(pieces, verdict.get('context_index'))}"
            for verdict in ranked
        )
        note = None
        if not any(label_of(verdict) == "yes" for verdict in ranked):
            note = "No context piece was useful, so the score is 0."
        return Reason(
            facts=f"Expected answer:\n{expected_of(ctx)}\n\nContext pieces in ranked order:\n"
            f"{ranking or '(none)'}\n(The score rewards useful pieces ranked before the others.)",
            empty_note=note,
        )

    analyze = PromptStep(
        description="Judge whether each context piece was useful",
        create_prompt=analyze_prompt,
        output_schema=PieceVerdicts,
    )
    return judged_scorer(_CARD, model, model_options, scale, analyze, score, explain)


def _piece(pieces: Sequence[str], index: Any) -> str:
    if isinstance(index, int | float) and not isinstance(index, bool) and index == int(index):
        position = int(index)
        if 0 <= position < len(pieces):
            return pieces[position]
    return "(no such piece)"
