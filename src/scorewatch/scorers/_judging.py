"""Shared pieces of the LLM-judged prebuilt scorers: answer schemas, judge set-up, the reason
prompt, and `judged_scorer`, which assembles a scorer from its card and steps. Reading and
scoring verdicts is in `_verdicts`.

Conventions every LLM-judged scorer follows:

* the judge returns verdicts (lists of labelled items); the score is computed from them in a
  function step, never asked of the judge;
* scores are rounded half up to two decimals (`round_to_two_decimals`);
* nothing to judge (no claims, no statements, no context) gives 0, and the reason prompt says so;
* the reason step asks the judge to explain the score already computed (`reason_prompt`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from ..core import JudgeConfig, PromptStep, Scorer, StepContext, create_scorer
from ..core.scorer import Direction
from ..judge.protocol import JudgeModel
from ._text import ContextExtractor, resolve_context
from .utils import format_number

__all__ = [
    "JudgeAnswer",
    "Reason",
    "ScorerCard",
    "bullets",
    "check_context_options",
    "context_pieces",
    "context_step",
    "field_of",
    "items_of",
    "judge",
    "judged_scorer",
    "numbered",
    "one_of",
    "ratio",
    "reason_prompt",
    "require_scale",
]


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
    items = schema.get("items")
    if isinstance(items, dict):
        _tighten(items)
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if isinstance(defs, dict):
            for sub in defs.values():
                if isinstance(sub, dict):
                    _tighten(sub)
    for key in ("anyOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for sub in options:
                if isinstance(sub, dict):
                    _tighten(sub)


class JudgeAnswer(BaseModel):
    """A judge answer: described strictly, validated leniently.

    The schema sent to the judge requires every field and forbids extras (what strict
    structured-output modes want, and shorter than pydantic's titled schema); validation ignores
    extra keys and fills defaults, so one sloppy field does not cost a fallback call.
    """

    model_config = ConfigDict(
        extra="ignore", json_schema_extra=lambda schema, _cls: _tighten(schema)
    )


def judge(
    model: str | JudgeModel, instructions: str, model_options: Mapping[str, Any] | None
) -> JudgeConfig:
    """The scorer-level judge: a litellm model id (with `model_options`) or a `JudgeModel`."""
    return JudgeConfig(model=model, instructions=instructions, model_options=model_options)


def require_scale(scale: float) -> float:
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not scale > 0:
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    return scale


def field_of(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, Mapping) else None


def items_of(result: Any, key: str) -> list[Any]:
    """The list under `key` of a step result, `[]` when absent."""
    found = field_of(result, key)
    return list(found) if isinstance(found, list) else []


def ratio(part: float, total: float) -> float:
    return 0.0 if total <= 0 else min(1.0, max(0.0, part / total))


def numbered(items: Sequence[str]) -> str:
    """`[0] first` lines: judges echo indices more reliably than they echo text."""
    return "\n".join(f"[{index}] {item}" for index, item in enumerate(items)) or "(none)"


def bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- none"


def one_of(*labels: str, default: str | None = None) -> Any:
    """A string field whose schema lists the allowed labels. Validation stays lenient (any
    string passes; scoring normalizes case and spaces and treats unknown labels as "no"), so a
    judge answering "Yes " under prompt-described JSON does not cost a fallback call, while a
    provider that enforces the schema only ever produces a listed label."""
    extra: JsonDict = {"enum": list(labels)}
    if default is None:
        return Field(json_schema_extra=extra)
    return Field(default=default, json_schema_extra=extra)


def reason_prompt(
    *,
    subject: str,
    score: float | None,
    scale: float,
    facts: str,
    empty_note: str | None = None,
) -> str:
    """Generate reason of every LLM-judged prebuilt scorer: a short explanation of a score
    that was already computed from the verdicts (the judge must not recompute it)."""
    shown = format_number(score if score is not None else 0)
    note = f"\n{empty_note}\n" if empty_note else ""
    return f"""Explain the {subject} score.

{facts}
{note}
Score: {shown} out of {format_number(scale)}

Rules: one or two sentences; name the verdicts that decided the score; use the score given \
above and do not recalculate it.
Format: "The score is {shown} because {{explanation}}"
"""


def check_context_options(context: Sequence[str] | None, extractor: object, scorer: str) -> None:
    """The reference system's construction checks for scorers that judge a context."""
    if context is None and extractor is None:
        raise ValueError(f"{scorer} needs context=[...] or context_extractor=")
    if context is not None and not isinstance(context, str) and len(context) == 0:
        raise ValueError(f"{scorer}: context must not be an empty list")


def context_step(
    context: Sequence[str] | None, context_extractor: ContextExtractor | None
) -> Callable[[StepContext], Awaitable[dict[str, Any]]]:
    """The preprocess of the scorers that judge context pieces: `context_extractor(input,
    output)` when given (sync or async), else `context`. Resolved once per run, as
    `{"context": [...]}`: an extractor may be slow, and later steps need the same list."""

    async def gather(ctx: StepContext) -> dict[str, Any]:
        pieces = await resolve_context(ctx.run.input, ctx.run.output, context, context_extractor)
        return {"context": pieces}

    return gather


def context_pieces(ctx: StepContext) -> list[str]:
    """The context pieces `context_step` resolved for this run."""
    return [str(piece) for piece in items_of(ctx.results.preprocess_step_result, "context")]


@dataclass(frozen=True, slots=True)
class ScorerCard:
    """What a prebuilt LLM-judged scorer is called and tells its judge.

    `subject` names the score in the reason step (`"faithfulness"` gives the step description
    "Explain the faithfulness score" and the prompt line "Explain the faithfulness score.").
    """

    id: str
    name: str
    description: str
    instructions: str
    subject: str
    direction: Direction = "higher_is_better"


@dataclass(frozen=True, slots=True)
class Reason:
    """What the reason prompt states besides the score: the facts that decided it, and why it
    is 0 when there was nothing to judge."""

    facts: str
    empty_note: str | None = None


def judged_scorer(
    card: ScorerCard,
    *,
    model: str | JudgeModel,
    model_options: Mapping[str, Any] | None,
    scale: float,
    analyze: PromptStep,
    score: Callable[[StepContext], float],
    explain: Callable[[StepContext], Reason],
    preprocess: PromptStep | Callable[[StepContext], Any] | None = None,
    nothing_to_judge: Callable[[StepContext], str | None] | None = None,
) -> Scorer:
    """An LLM-judged prebuilt scorer: [preprocess ->] analyze -> score (a function of the
    verdicts, never asked of the judge) -> a judge-written reason for the score.

    `nothing_to_judge(ctx)`, when given, says why a run has nothing to judge (an empty response,
    no ground truth): the score is then 0 whatever the verdicts, and the reason prompt gives
    that note ahead of `explain`'s own.
    """

    def zero_note(ctx: StepContext) -> str | None:
        return nothing_to_judge(ctx) if nothing_to_judge is not None else None

    def score_or_zero(ctx: StepContext) -> float:
        return 0.0 if zero_note(ctx) else score(ctx)

    def reason(ctx: StepContext) -> str:
        stated = explain(ctx)
        return reason_prompt(
            subject=card.subject,
            score=ctx.score,
            scale=scale,
            facts=stated.facts,
            empty_note=zero_note(ctx) or stated.empty_note,
        )

    scorer = create_scorer(
        id=card.id,
        name=card.name,
        description=card.description,
        judge=judge(model, card.instructions, model_options),
        type="agent",
        scale=scale,
        direction=card.direction,
    )
    if preprocess is not None:
        scorer = scorer.preprocess(preprocess)
    return (
        scorer.analyze(analyze)
        .generate_score(score_or_zero)
        .generate_reason(
            PromptStep(description=f"Explain the {card.subject} score", create_prompt=reason)
        )
    )
