"""What the summarization scorer says to its judge: the instructions, three prompts, two schemas.

The prompts are deliberately compact: the source is the bulk of what is sent, and it is sent once
(the coverage prompt never sees it, and the reason prompt works from the verdicts instead of
re-reading it). Each prompt carries a fixed phrase that scripted test judges route on:
`Part 1 (alignment)`, `Decide whether each question can be answered`,
`Explain the summarization score`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

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
    "You are a strict evaluator of summaries. Judge only from the texts you are given, never from "
    "your own knowledge. A claim is supported only when the source states it or directly implies "
    "it. Where the source is precise, an approximation is a deviation; different wording with the "
    "same meaning is fine. Judge each claim and each question on its own. Accuracy (is the summary "
    "true to the source?) and coverage (does it keep what the source says?) are separate concerns."
)

_MATCHING = (
    "Matching: dates, numbers, names and domain terms must match exactly; paraphrase is fine when "
    "the meaning holds; a weaker or stronger statement does not match."
)


# --------------------------------------------------------------------------------------------
# schemas


def _tighten(schema: dict[str, Any]) -> None:
    """Drop generated titles and defaults; require every property and forbid others, recursively."""
    schema.pop("title", None)
    schema.pop("default", None)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["required"] = list(properties)
        schema["additionalProperties"] = False
        for sub in properties.values():
            if isinstance(sub, dict):
                _tighten(sub)
    for key in ("items", "$defs"):
        value = schema.get(key)
        if isinstance(value, dict):
            if key == "$defs":
                for sub in value.values():
                    if isinstance(sub, dict):
                        _tighten(sub)
            else:
                _tighten(value)


class _JudgeAnswer(BaseModel):
    """A judge answer: validated leniently, described strictly.

    The schema sent to the judge requires every field and forbids extras (what strict
    structured-output modes demand, and fewer characters than pydantic's titled schema), while
    validation ignores extra keys and fills a missing `reason`, so one sloppy field does not cost
    a fallback call.
    """

    model_config = ConfigDict(
        extra="ignore", json_schema_extra=lambda schema, _cls: _tighten(schema)
    )


class ClaimVerdict(_JudgeAnswer):
    claim: str
    supported: bool
    reason: str = ""


class SourceJudgement(_JudgeAnswer):
    alignment: list[ClaimVerdict]
    questions: list[str]


class QuestionVerdict(_JudgeAnswer):
    question: str
    answered: bool
    reason: str = ""


class CoverageJudgement(_JudgeAnswer):
    coverage: list[QuestionVerdict]


# --------------------------------------------------------------------------------------------
# prompts


def source_judgement_prompt(source: str, summary: str, max_questions: int) -> str:
    """Preprocess: the summary's claims checked against the source, questions from the source."""
    return f"""Complete two independent parts using the source text and the summary below.

Part 1 (alignment): split the summary into atomic claims, one fact each (split compound \
sentences; keep numbers, dates and quantities; skip questions, commands and remarks on style). \
Mark a claim supported only if the source states it or directly implies it; contradicted or \
absent means false. Use an empty list if the summary makes no claims.

Part 2 (questions): write at most {format_number(max_questions)} closed yes/no questions that the \
source answers "yes", most important first, each specific and checkable. Choose them from the \
source alone: the summary must not influence the choice. No question the source answers only \
"maybe" or "partially". Use an empty list if the source is empty.

{_MATCHING}

Format: {{"alignment":[{{"claim":str,"supported":bool,"reason":str}}],"questions":[str]}}
Example. Source: "Company Y, based in Boston, builds sensors with 99% accuracy. It opened a \
Seattle office in 2018." Summary: "Boston's Company Y builds sensors that are 95% accurate."
{{"alignment":[{{"claim":"Company Y is based in Boston","supported":true,"reason":"Stated."}},\
{{"claim":"Company Y builds sensors","supported":true,"reason":"Stated."}},\
{{"claim":"The sensors are 95% accurate","supported":false,"reason":"The source says 99%."}}],\
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
    listed = "\n".join(f"[{index}] {question}" for index, question in enumerate(questions))
    return f"""Decide whether each question can be answered from the summary below. The summary is \
your only evidence: use no prior knowledge and do not guess. A question is answered only if the \
summary holds enough information to answer it; omitted or contradicted means false.
{_MATCHING}
The number of verdicts MUST MATCH the number of questions exactly: one per question, in order.

Summary:
{summary}

Number of questions: {len(questions)}
Questions:
{listed or "(none)"}

Format: {{"coverage":[{{"question":str,"answered":bool,"reason":str}}]}}
Example, for a summary "Company Y builds sensors." and the questions "[0] Does Company Y build \
sensors?" and "[1] Did it open a Seattle office in 2018?":
{{"coverage":[{{"question":"Does Company Y build sensors?","answered":true,"reason":"Stated."}},\
{{"question":"Did it open a Seattle office in 2018?","answered":false,"reason":"Not mentioned."}}]}}

JSON:
"""


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- none"


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
        notes.append("The summary made no claims that could be checked, so the score is 0.")
    if question_count == 0:
        notes.append("The source gave no questions to check coverage with, so the score is 0.")
    note = "\n".join(notes) + "\n" if notes else ""
    return f"""Explain the summarization score for the given summary.

Summary:
{summary}

Score: {shown} out of {format_number(scale)}
Alignment score: {format_number(alignment_score)} (share of the summary's claims the source \
supports)
Coverage score: {format_number(coverage_score)} (share of the source's questions the summary \
answers)
The score is the lower of the two axis scores, times the scale.
{note}
Unsupported claims:
{_bullets(unsupported_claims)}

Unanswered questions:
{_bullets(missing_questions)}

Rules: name the axis that decided the score (the lower one, or both if tied) and point at the \
claims or questions behind it; keep it to one or two sentences; use the score given above and do \
not recalculate it.
Format: "The score is {shown} because {{explanation}}"
Examples:
The score is 1 because every claim is supported and the summary answers every question.
The score is 0.5 because alignment decided it: the summary gives 95% accuracy where the source \
says 99%.
The score is 0.25 because coverage decided it: the summary omits the founding year and the founder.
"""
