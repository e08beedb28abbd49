"""The answer-relevancy scorer: does the output address what the user asked?

Three judge calls:

1. preprocess (judge): the output split into statements;
2. analyze (judge): one verdict per statement against the user's message: `yes` (relevant),
   `unsure` (related but indirect) or `no`;
   The analyze result is `{"results": [{"result", "reason"}]}`, as the reference system's;
3. generate_score (function): (yes + `uncertainty_weight` x unsure) / results returned x
   `scale`, rounded half up to two decimals; no results -> 0 (the reference system's formula);
4. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. Routing marker of the analyze prompt: `Judge each statement's
relevance`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core import Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import JudgeAnswer, bullets, numbered, require_scale
from ._text import request_text, response_text
from ._verdicts import (
    RESULTS_FORMAT,
    ItemVerdicts,
    ResultList,
    item_verdict_scorer,
    output_items_step,
    verdict_share,
)

__all__ = [
    "ANSWER_RELEVANCY_SCORER_ID",
    "answer_relevancy_score",
    "create_answer_relevancy_scorer",
]

ANSWER_RELEVANCY_SCORER_ID = "answer-relevancy-scorer"

INSTRUCTIONS = (
    "You judge whether an answer addresses the question it was given. Relevance, not "
    "correctness: a wrong but on-topic statement is relevant. A statement about the kind of "
    "information asked for is partly relevant ('unsure'). Empty answers and error messages are "
    "not relevant."
)

_CARD = ScorerCard(
    name="answer-relevancy",
    id=ANSWER_RELEVANCY_SCORER_ID,
    scorer_name="Answer Relevancy Scorer",
    description="Measures how much of the output addresses the user's message",
    judge_calls=3,
    instructions=INSTRUCTIONS,
    subject="answer relevancy",
)


class StatementList(JudgeAnswer):
    statements: list[str]


def _extract_prompt(output: str) -> str:
    return f"""Split the output below into statements: each sentence, and each part of a \
compound sentence, that says one thing. Keep the wording. Return an empty list if the output is \
empty.

Output:
{output}

Format: {{"statements":[str]}}
"""


def _analyze_prompt(question: str, statements: Sequence[str]) -> str:
    return f"""Judge each statement's relevance to the user's message: "yes" if it helps answer \
it, "unsure" if it is related but does not answer it directly, "no" if it is off topic. Exactly \
one result per statement, in the order of the statements.

User's message:
{question or "(empty)"}

Statements:
{numbered(statements)}

Format: {RESULTS_FORMAT}
"""


def answer_relevancy_score(
    results: Sequence[Any], uncertainty_weight: float = 0.3, scale: float = 1
) -> float:
    """(yes + uncertainty_weight x unsure) / results x scale, rounded; 0 without results."""
    return verdict_share(
        results,
        scale,
        lambda labels: labels.count("yes") + uncertainty_weight * labels.count("unsure"),
        name="result",
    )


def _facts(ctx: StepContext, judged: ItemVerdicts) -> str:
    return (
        f"User's message:\n{request_text(ctx.run.input)}\n\n"
        f"Output:\n{response_text(ctx.run.output)}\n\n"
        f"Statements: {len(judged.items)}, results: {len(judged.labels)}, "
        f"relevant: {judged.count('yes')}, "
        f"partly relevant: {judged.count('unsure')}\n"
        f"Statements not fully relevant:\n{bullets(judged.others('yes'))}"
    )


@prebuilt(_CARD)
def create_answer_relevancy_scorer(
    model: str | JudgeModel,
    *,
    uncertainty_weight: float = 0.3,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Share of the output's statements that address the user's message, times `scale`.

    `uncertainty_weight` (0..1, default 0.3) is the credit of an `unsure` statement. Three judge
    calls; range 0..scale; higher is better.
    """
    require_scale(scale)
    if not 0 <= uncertainty_weight <= 1:
        raise ValueError(f"uncertainty_weight must be within 0..1, got {uncertainty_weight}")
    return item_verdict_scorer(
        _CARD,
        model=model,
        model_options=model_options,
        scale=scale,
        items_key="statements",
        extract=output_items_step(
            "Split the output into statements", _extract_prompt, StatementList
        ),
        analyze_description="Judge each statement's relevance to the user's message",
        analyze_prompt=lambda ctx, statements: _analyze_prompt(
            request_text(ctx.run.input), statements
        ),
        verdict_schema=ResultList,
        score=lambda _ctx, results: answer_relevancy_score(results, uncertainty_weight, scale),
        facts=_facts,
        no_items_note="The output had no statements to judge, so the score is 0.",
        verdicts_key="results",
        label="result",
    )
