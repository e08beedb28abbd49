"""What the summarization scorer says to its judge: the instructions, three prompts, two schemas.

The prompts are deliberately compact: the source is the bulk of what is sent, and it is sent once
(the coverage prompt never sees it, and the reason prompt works from the verdicts instead of
re-reading it). Each prompt carries a fixed phrase that scripted test judges route on:
`Part 1 (alignment)`, `Decide whether each question can be answered`,
`Explain the summarization score`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._judging import JudgeAnswer, bullets, numbered
from .utils import format_number

__all__ = [
    "SUMMARIZATION_INSTRUCTIONS",
    "ClaimVerdict",
    "CoverageJudgement",
    "QuestionVerdict",
    "SourceJudgement",
    "coverage_prompt",
    "reason_prompt",
    "source_judgement_prompt",
]

SUMMARIZATION_INSTRUCTIONS = (
    "You are a strict summary evaluator. Use only the texts given, never your own knowledge. A "
    "claim is supported only if the source states or directly implies it. Approximating a precise "
    "detail is a deviation; equivalent wording is fine. Judge each claim and question on its own: "
    "accuracy and coverage are separate concerns."
)

_MATCHING = (
    "Matching: dates, numbers, names and domain terms must match exactly; paraphrase is fine if "
    "the meaning holds; a weaker or stronger statement does not match."
)


# --------------------------------------------------------------------------------------------
# schemas


class ClaimVerdict(JudgeAnswer):
    claim: str
    supported: bool
    reason: str = ""


class SourceJudgement(JudgeAnswer):
    alignment: list[ClaimVerdict]
    questions: list[str]


class QuestionVerdict(JudgeAnswer):
    question: str
    answered: bool
    reason: str = ""


class CoverageJudgement(JudgeAnswer):
    coverage: list[QuestionVerdict]


# --------------------------------------------------------------------------------------------
# prompts


def source_judgement_prompt(source: str, summary: str, max_questions: int) -> str:
    """Preprocess: the summary's claims checked against the source, questions from the source."""
    return f"""Complete two independent parts using the source text and the summary below.

Part 1 (alignment): split the summary into atomic claims, one fact each (split compound \
sentences, keep numbers, dates and quantities, skip questions, commands and style). A claim is \
supported only if the source states or directly implies it; contradicted or absent is false. \
Empty list if the summary makes no claims.

Part 2 (questions): at most {format_number(max_questions)} closed questions the source answers \
"yes", most important first, specific and checkable, chosen from the source alone (ignore the \
summary here), none answered only "maybe" or "partially". Empty list if the source is empty.

{_MATCHING}

Format: {{"alignment":[{{"claim":str,"supported":bool,"reason":str}}],"questions":[str]}}
Example. Source: "Company Y, based in Boston, makes sensors with 99% accuracy. It opened a \
Seattle office in 2018." Summary: "Boston's Company Y makes 95%-accurate sensors."
{{"alignment":[{{"claim":"Company Y is in Boston","supported":true,"reason":"Stated"}},\
{{"claim":"Company Y makes sensors","supported":true,"reason":"Stated"}},\
{{"claim":"Its sensors are 95% accurate","supported":false,"reason":"Source: 99%"}}],\
"questions":["Is Company Y based in Boston?","Are its sensors 99% accurate?",\
"Did it open a Seattle office in 2018?"]}}

Source Text:
{source}

Summary:
{summary}

JSON:
"""


def coverage_prompt(summary: str, questions: Sequence[str]) -> str:
    """Analyze: each question answered from the summary alone. Never give this prompt the source."""
    return f"""Decide whether each question can be answered from the summary below, your only \
evidence (no prior knowledge, no guessing). Answered only if the summary holds enough information; \
omitted or contradicted is false.
{_MATCHING}
The number of verdicts MUST MATCH the number of questions exactly, in order.

Summary:
{summary}

Number of questions: {len(questions)}
Questions:
{numbered(questions)}

Format: {{"coverage":[{{"question":str,"answered":bool,"reason":str}}]}}
Example. Summary: "Company Y makes sensors." Questions: [0] Does Company Y make sensors? \
[1] Did it open a Seattle office?
{{"coverage":[{{"question":"Does Company Y make sensors?","answered":true,"reason":"Stated"}},\
{{"question":"Did it open a Seattle office?","answered":false,"reason":"Not mentioned"}}]}}

JSON:
"""


def reason_prompt(
    *,
    summary: str,
    score: float,
    scale: float,
    alignment_score: float,
    coverage_score: float,
    unsupported_claims: Sequence[str],
    missing_questions: Sequence[str],
    claim_count: int,
    question_count: int,
) -> str:
    """Generate reason: a short explanation naming the axis that decided the score."""
    shown = format_number(score)
    notes = []
    if claim_count == 0:
        notes.append("The summary made no claims to check, so the score is 0.")
    if question_count == 0:
        notes.append("The source gave no questions to check coverage, so the score is 0.")
    note = "\n".join(notes) + "\n" if notes else ""
    return f"""Explain the summarization score for the given summary.

Summary:
{summary}

Score: {shown} out of {format_number(scale)}
Alignment score: {format_number(alignment_score)} (claims the source supports)
Coverage score: {format_number(coverage_score)} (source questions the summary answers)
The score is the lower axis score times the scale.
{note}
Unsupported claims:
{bullets(unsupported_claims)}

Unanswered questions:
{bullets(missing_questions)}

Rules: name the deciding axis (the lower one, or both if tied) and the claims or questions \
behind it; one or two sentences; use the score above, do not recalculate it.
Format: "The score is {shown} because {{explanation}}"
Examples:
The score is 1 because every claim is supported and the summary answers every question.
The score is 0.5 because alignment decided it: the summary says 95% where the source says 99%.
The score is 0.25 because coverage decided it: the founding year and founder are missing.
"""
