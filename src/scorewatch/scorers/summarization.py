"""The summarization scorer: is the summary true to its source, and does it keep what matters?

Two axes, three judge calls:

1. preprocess (judge): the summary's atomic claims, each checked against the source, and up to
   `max_questions` closed questions the source answers "yes";
2. analyze (judge): each question answered from the summary ALONE. The source is never in this
   prompt: a judge that could read it would answer from it and hide the summary's omissions;
3. generate_score (function): `min(alignment, coverage) * scale`, rounded half up to 2 decimals,
   0 when there are no claims or no questions;
4. generate_reason (judge): a short explanation naming the axis that decided the score.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import field_of, items_of, judge, ratio
from ._summarization_prompts import (
    SUMMARIZATION_INSTRUCTIONS,
    CoverageJudgement,
    SourceJudgement,
    coverage_prompt,
    reason_prompt,
    source_judgement_prompt,
)
from ._text import extracted, request_text, response_text
from ._verdicts import by_position
from .utils import round_to_two_decimals

__all__ = [
    "SUMMARIZATION_DESCRIPTION",
    "SUMMARIZATION_SCORER_ID",
    "SUMMARIZATION_SCORER_NAME",
    "AxisMeasures",
    "SourceExtractor",
    "create_summarization_scorer",
    "measure_axes",
    "summary_of",
]

SUMMARIZATION_SCORER_ID = "summarization-scorer"
SUMMARIZATION_SCORER_NAME = "Summarization Scorer"
SUMMARIZATION_DESCRIPTION = (
    "A scorer that evaluates whether a summary stays faithful to its source text and preserves "
    "the information the source states"
)

_CARD = ScorerCard(
    name="summarization",
    id=SUMMARIZATION_SCORER_ID,
    scorer_name=SUMMARIZATION_SCORER_NAME,
    description=SUMMARIZATION_DESCRIPTION,
    judge_calls=3,
)

SourceExtractor = Callable[[Any, Any], "str | Awaitable[str | None] | None"]


# --------------------------------------------------------------------------------------------
# scoring


@dataclass(frozen=True, slots=True)
class AxisMeasures:
    """Both axes measured from the verdicts.

    `is_scorable` is False when the summary made no claims or no question was asked; the score
    is then 0 whatever the axes say.
    """

    alignment_score: float
    coverage_score: float
    unsupported_claims: list[str]
    missing_questions: list[str]
    claim_count: int
    question_count: int

    @property
    def is_scorable(self) -> bool:
        return self.claim_count > 0 and self.question_count > 0


def measure_axes(
    *,
    questions: Sequence[str],
    alignment: Sequence[Any],
    coverage: Sequence[Any],
    max_questions: int,
) -> AxisMeasures:
    """Alignment and coverage from the judge's verdicts.

    Coverage verdicts are matched to questions by POSITION, not by text: the judge may reword a
    question when echoing it. Questions beyond `max_questions` are ignored; a missing verdict
    counts as unanswered; verdicts beyond the questions asked are ignored. Alignment is not capped.
    """
    asked = list(questions[: max(max_questions, 0)])
    answered = [
        field_of(verdict, "answered") is True for verdict in by_position(len(asked), coverage)
    ]
    supported = [field_of(verdict, "supported") is True for verdict in alignment]
    return AxisMeasures(
        alignment_score=ratio(sum(supported), len(alignment)),
        coverage_score=ratio(sum(answered), len(asked)),
        unsupported_claims=[
            str(field_of(verdict, "claim") or "")
            for verdict, ok in zip(alignment, supported, strict=True)
            if not ok
        ],
        missing_questions=[
            str(question) for question, ok in zip(asked, answered, strict=True) if not ok
        ],
        claim_count=len(alignment),
        question_count=len(asked),
    )


# --------------------------------------------------------------------------------------------
# what is judged


def summary_of(output: Any) -> str:
    """The summary: the last assistant message with non-blank text.

    For a message list (agent messages or OpenAI-style chat messages alike) a tool-call turn
    with no text before the final answer is skipped. Any other output falls back to the generic
    assistant-text lookup.
    """
    return response_text(output)


async def _source_of(
    run_input: Any, output: Any, source: str | None, source_extractor: SourceExtractor | None
) -> str:
    """The source text: the extractor's answer, else `source`, else the first user message.

    Unlike the reference system, the extractor is called for every run shape, not only for
    agent-shaped runs: with OpenAI-style messages its silent skip would judge the wrong text.
    """
    if source_extractor is not None:
        found = await extracted(source_extractor, run_input, output)
        return "" if found is None else str(found)
    if source is not None:
        return source
    return request_text(run_input)


def _measures(ctx: StepContext, max_questions: int) -> AxisMeasures:
    preprocess = ctx.results.preprocess_step_result
    return measure_axes(
        questions=items_of(preprocess, "questions"),
        alignment=items_of(preprocess, "alignment"),
        coverage=items_of(ctx.results.analyze_step_result, "coverage"),
        max_questions=max_questions,
    )


# --------------------------------------------------------------------------------------------
# the scorer


@prebuilt(_CARD)
def create_summarization_scorer(
    model: str | JudgeModel,
    *,
    source: str | None = None,
    source_extractor: SourceExtractor | None = None,
    max_questions: int = 10,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """A scorer of summaries: the lower of alignment (claims the source supports) and coverage
    (source questions the summary answers), times `scale`.

    `model` is a litellm model id (`model_options` are passed to `LiteLLMJudge`) or any
    `JudgeModel`. The source is `source_extractor(input, output)` when given (sync or async),
    else `source`, else the first user message of the run input; the summary is the last
    non-blank assistant text of the run output. At most `max_questions` coverage questions are
    asked.
    """
    if isinstance(max_questions, bool) or not isinstance(max_questions, int):
        raise TypeError(f"max_questions must be an int, got {type(max_questions).__name__}")
    if max_questions < 1:
        raise ValueError(
            "maxQuestions must be at least 1 for Summarization scoring "
            f"(max_questions={max_questions})"
        )

    async def preprocess_prompt(ctx: StepContext) -> str:
        text = await _source_of(ctx.run.input, ctx.run.output, source, source_extractor)
        return source_judgement_prompt(text, summary_of(ctx.run.output), max_questions)

    def analyze_prompt(ctx: StepContext) -> str:
        questions = items_of(ctx.results.preprocess_step_result, "questions")
        asked = [str(question) for question in questions[:max_questions]]
        return coverage_prompt(summary_of(ctx.run.output), asked)

    def score(ctx: StepContext) -> float:
        measures = _measures(ctx, max_questions)
        if not measures.is_scorable:
            return 0.0
        return round_to_two_decimals(min(measures.alignment_score, measures.coverage_score) * scale)

    def explain_prompt(ctx: StepContext) -> str:
        measures = _measures(ctx, max_questions)
        return reason_prompt(
            summary=summary_of(ctx.run.output),
            score=ctx.score if ctx.score is not None else 0.0,
            scale=scale,
            alignment_score=round_to_two_decimals(measures.alignment_score),
            coverage_score=round_to_two_decimals(measures.coverage_score),
            unsupported_claims=measures.unsupported_claims,
            missing_questions=measures.missing_questions,
            claim_count=measures.claim_count,
            question_count=measures.question_count,
        )

    return (
        _CARD.create_scorer(
            judge=judge(model, SUMMARIZATION_INSTRUCTIONS, model_options), scale=scale
        )
        .preprocess(
            PromptStep(
                description="Check the summary's claims against the source and draw questions "
                "from the source",
                create_prompt=preprocess_prompt,
                output_schema=SourceJudgement,
            )
        )
        .analyze(
            PromptStep(
                description="Answer the source's questions from the summary alone",
                create_prompt=analyze_prompt,
                output_schema=CoverageJudgement,
            )
        )
        .generate_score(score)
        .generate_reason(
            PromptStep(
                description="Explain which axis decided the summarization score",
                create_prompt=explain_prompt,
            )
        )
    )
