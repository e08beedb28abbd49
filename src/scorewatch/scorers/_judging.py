"""Shared pieces of the LLM-judged prebuilt scorers: answer schemas, judge set-up, the reason
prompt, and `judged_scorer`, which assembles a scorer from its card and steps. Reading and
scoring verdicts is in `_verdicts`.

Conventions every LLM-judged scorer follows:

* the judge returns verdicts (lists of labelled items); the score is computed from them in a
  function step (noise sensitivity and prompt alignment also weigh the judge's own sub-scores,
  as the reference system does);
* step results keep the reference system's keys, and only the keys the judge answered;
* scores are rounded half up to two decimals (`round_to_two_decimals`);
* the score formulas, their denominators and their empty cases are the reference system's
  (`@mastra/evals` 1.10); see `docs/scorers.md` for the few deliberate differences;
* the reason step asks the judge to explain the score already computed (`reason_prompt`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.config import JsonDict

from ..core import JudgeConfig, PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard
from ._text import ContextExtractor, js_lower, js_trim, resolve_context
from .utils import format_number

__all__ = [
    "JudgeAnswer",
    "Reason",
    "bullets",
    "context_of",
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
    """A judge answer: described strictly, validated leniently (but a label outside a listed
    set fails, as the reference system's enums do).

    The schema sent to the judge requires every field and forbids extras (what strict
    structured-output modes want, and shorter than pydantic's titled schema); validation ignores
    extra keys and fills defaults, so one sloppy field does not cost a fallback call. The step
    result keeps only the keys the judge gave (see `_as_answered`).
    """

    model_config = ConfigDict(
        extra="ignore", json_schema_extra=lambda schema, _cls: _tighten(schema)
    )

    @model_validator(mode="after")
    def _labels_are_listed(self) -> Self:
        for name, info in type(self).model_fields.items():
            extra = info.json_schema_extra
            listed = extra.get("enum") if isinstance(extra, dict) else None
            value = getattr(self, name)
            if not isinstance(listed, list) or not isinstance(value, str):
                continue
            if js_lower(js_trim(value)) not in listed:
                raise ValueError(f"{name} must be one of {', '.join(map(str, listed))}")
        return self

    @model_serializer(mode="wrap")
    def _as_answered(self, handler: SerializerFunctionWrapHandler) -> Any:
        # The step result is what the judge answered, as in the reference system: a key the
        # judge left out stays out (its default only serves the formulas), extras are dropped.
        data = handler(self)
        if isinstance(data, dict):
            for name in set(type(self).model_fields) - self.model_fields_set:
                data.pop(name, None)
        return data


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
    """A string field that must be one of `labels`, as the reference system's enum fields:
    the schema lists them, and an answer with another label fails validation (one fallback
    call, then the run fails). The comparison trims and lower-cases (`"High "` is `high`), a
    deliberate leniency; the value is kept as the judge wrote it."""
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


def context_of(
    context: Sequence[str] | None, context_extractor: ContextExtractor | None, *, scorer: str
) -> Callable[[StepContext], Awaitable[list[str]]]:
    """The context pieces of a run for the scorers that judge context: `context_extractor(input,
    output)` when given (sync or async), else `context`. Resolved by every step that needs it,
    as the reference system does, so no step result carries a copy of the context.

    Raises at construction, as the reference system does, when `scorer` is given neither or an
    empty `context` list."""
    if context is None and context_extractor is None:
        raise ValueError(f"{scorer} needs context=[...] or context_extractor=")
    if context is not None and not isinstance(context, str) and len(context) == 0:
        raise ValueError(f"{scorer}: context must not be an empty list")

    async def pieces(ctx: StepContext) -> list[str]:
        return await resolve_context(ctx.run.input, ctx.run.output, context, context_extractor)

    return pieces


@dataclass(frozen=True, slots=True)
class Reason:
    """What the reason prompt states besides the score: the facts that decided it, and why it
    is 0 when there was nothing to judge."""

    facts: str
    empty_note: str | None = None


def judged_scorer(
    card: ScorerCard,
    model: str | JudgeModel,
    model_options: Mapping[str, Any] | None,
    scale: float,
    analyze: PromptStep,
    score: Callable[[StepContext], Any],
    explain: Callable[[StepContext], Reason | Awaitable[Reason]],
    *,
    preprocess: PromptStep | Callable[[StepContext], Any] | None = None,
) -> Scorer:
    """An LLM-judged prebuilt scorer: [preprocess ->] analyze -> score (a function of the
    verdicts, never asked of the judge) -> a judge-written reason for the score.

    `score(ctx)` may be async and may return `not_scorable(...)`; `explain(ctx)` (sync or
    async) gives the facts the reason prompt states.
    """

    async def reason(ctx: StepContext) -> str:
        stated = explain(ctx)
        if inspect.isawaitable(stated):
            stated = await stated
        return reason_prompt(
            subject=card.subject,
            score=ctx.score,
            scale=scale,
            facts=stated.facts,
            empty_note=stated.empty_note,
        )

    scorer = card.create_scorer(judge=judge(model, card.instructions, model_options), scale=scale)
    if preprocess is not None:
        scorer = scorer.preprocess(preprocess)
    return (
        scorer.analyze(analyze)
        .generate_score(score)
        .generate_reason(
            PromptStep(description=f"Explain the {card.subject} score", create_prompt=reason)
        )
    )
