"""Reading a judge's verdicts, scoring them, and the item-verdict scorer built on them.

An item-verdict scorer (faithfulness, hallucination, answer relevancy, bias) runs:

1. preprocess (judge): the items of the output - claims, statements, opinions - under one key;
2. analyze (judge): one labelled verdict per item. Verdicts are matched to items by POSITION
   (judges reword items when echoing them): extra verdicts are dropped, a missing one is
   labelled `''`, which no formula credits;
3. generate_score (function): the credit of the labels / items x `scale`, rounded half up to
   two decimals; no items -> 0;
4. generate_reason (judge): the facts the scorer states about its verdicts.

Labels are compared trimmed and lower-cased: `" Yes"` counts as `"yes"`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._judging import (
    JudgeAnswer,
    Reason,
    ScorerCard,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    one_of,
)
from ._text import ContextExtractor, resolve_context, response_text
from .utils import round_to_two_decimals

__all__ = [
    "CLAIMS_STEP",
    "VERDICTS_FORMAT",
    "ClaimList",
    "GradedVerdictList",
    "ItemVerdicts",
    "VerdictList",
    "aligned_labels",
    "by_index",
    "by_position",
    "claims_prompt",
    "flagged_facts",
    "flagged_items_facts",
    "item_verdict_scorer",
    "judged_against_context",
    "label_of",
    "verdict_share",
    "weight_of",
    "yes_count",
]


def label_of(entry: Any, name: str = "verdict") -> str:
    """A verdict label, trimmed and lower-cased (`" Yes"` counts as `"yes"`)."""
    value = field_of(entry, name)
    return value.strip().lower() if isinstance(value, str) else ""


def weight_of(entry: Any, name: str, weights: Mapping[str, float]) -> float:
    """What the label under `name` weighs in `weights`; a missing or unknown label weighs 0."""
    return weights.get(label_of(entry, name), 0.0)


def by_position(count: int, entries: Sequence[Any]) -> list[Any]:
    """The entry for each of `count` judged items, matched by POSITION (judges reword items
    when echoing them): extra entries are dropped, a missing one is None."""
    matched = list(entries[:count])
    return matched + [None] * (count - len(matched))


def aligned_labels(expected: int, verdicts: Sequence[Any], name: str = "verdict") -> list[str]:
    """One label per judged item, matched by position (`by_position`); a missing verdict is
    `''` (counts as no)."""
    return [label_of(verdict, name) for verdict in by_position(expected, verdicts)]


def by_index(count: int, entries: Sequence[Any], key: str = "context_index") -> list[Any]:
    """The entry for each of `count` items, matched by the index the judge gave under `key`:
    the first entry for an index wins; None where no entry names the index."""
    found: dict[int, Any] = {}
    for entry in entries:
        index = field_of(entry, key)
        if isinstance(index, int) and 0 <= index < count and index not in found:
            found[index] = entry
    return [found.get(index) for index in range(count)]


# --------------------------------------------------------------------------------------------
# verdict schemas


class YesNoVerdict(JudgeAnswer):
    item: str = ""
    verdict: str = one_of("yes", "no")
    reason: str = ""


class YesNoUnsureVerdict(JudgeAnswer):
    item: str = ""
    verdict: str = one_of("yes", "no", "unsure")
    reason: str = ""


class VerdictList(JudgeAnswer):  # verdicts yes / no
    verdicts: list[YesNoVerdict]


class GradedVerdictList(JudgeAnswer):  # verdicts yes / no / unsure
    verdicts: list[YesNoUnsureVerdict]


VERDICTS_FORMAT = '{"verdicts":[{"item":str,"verdict":str,"reason":str}]}'


# --------------------------------------------------------------------------------------------
# scoring


def yes_count(labels: Sequence[str]) -> float:
    return labels.count("yes")


def verdict_share(
    total: int,
    verdicts: Sequence[Any],
    scale: float,
    credit: Callable[[list[str]], float] = yes_count,
) -> float:
    """`credit` of the `total` items' labels / total x scale, rounded; 0 without items."""
    if total == 0:
        return 0.0
    return round_to_two_decimals(credit(aligned_labels(total, verdicts)) / total * scale)


@dataclass(frozen=True, slots=True)
class ItemVerdicts:
    """The items a scorer judged and the label each got (`''` for no verdict), by position."""

    items: list[str]
    labels: list[str]

    @classmethod
    def of(cls, ctx: StepContext, key: str) -> ItemVerdicts:
        items = [str(item) for item in items_of(ctx.results.preprocess_step_result, key)]
        verdicts = items_of(ctx.results.analyze_step_result, "verdicts")
        return cls(items, aligned_labels(len(items), verdicts))

    def count(self, label: str) -> int:
        return self.labels.count(label)

    def labelled(self, label: str) -> list[str]:
        """The items that got `label`."""
        return [item for item, got in zip(self.items, self.labels, strict=True) if got == label]

    def others(self, label: str) -> list[str]:
        """The items that did not get `label`, each followed by the label it got."""
        return [
            f"{item} ({got or 'no verdict'})"
            for item, got in zip(self.items, self.labels, strict=True)
            if got != label
        ]


def flagged_facts(output: str, total: int, items: str, flag: str, flagged: Sequence[str]) -> str:
    """The reason facts of a lower-is-better share: the output, how many of its `items` were
    flagged (`"claims"`, `"hallucinated"`), and which."""
    return (
        f"Output:\n{output}\n\n"
        f"{items.capitalize()}: {total}, {flag}: {len(flagged)} (a higher score is worse)\n"
        f"{flag.capitalize()} {items}:\n{bullets(flagged)}"
    )


# --------------------------------------------------------------------------------------------
# the item-verdict scorer


class ClaimList(JudgeAnswer):
    claims: list[str]


def claims_prompt(output: str) -> str:
    """Preprocess of the claim-based scorers: the output's atomic factual claims."""
    return f"""Extract the factual claims of the output below.
Split it into atomic claims, one checkable fact each: split compound sentences, keep numbers, \
dates, names and quantities, resolve pronouns. Skip questions, greetings, opinions about style \
and statements about the conversation itself. Return an empty list if there are none.

Output:
{output}

Format: {{"claims":[str]}}
Example: "Paris, the capital of France, has 2.1 million people." -> \
{{"claims":["Paris is the capital of France","Paris has 2.1 million people"]}}
"""


CLAIMS_STEP = PromptStep(
    description="Extract the factual claims of the output",
    create_prompt=lambda ctx: claims_prompt(response_text(ctx.run.output)),
    output_schema=ClaimList,
)


def flagged_items_facts(items: str, flag: str) -> Callable[[StepContext, ItemVerdicts], str]:
    """The `facts` of an item-verdict scorer whose `yes` verdicts flag bad items."""

    def facts(ctx: StepContext, judged: ItemVerdicts) -> str:
        output = response_text(ctx.run.output)
        return flagged_facts(output, len(judged.items), items, flag, judged.labelled("yes"))

    return facts


def judged_against_context(
    prompt: Callable[[Sequence[str], Sequence[str]], str],
    context: Sequence[str] | None,
    context_extractor: ContextExtractor | None,
) -> Callable[[StepContext, list[Any]], Awaitable[str]]:
    """An analyze prompt, `prompt(items, context pieces)`, that judges the items against the
    context: `context_extractor(input, output)` when given (sync or async), else `context`, else
    the results of the tools the agent called."""

    async def create_prompt(ctx: StepContext, items: list[Any]) -> str:
        pieces = await resolve_context(
            ctx.run.input, ctx.run.output, context, context_extractor, from_tools=True
        )
        return prompt(items, pieces)

    return create_prompt


def item_verdict_scorer(
    card: ScorerCard,
    *,
    model: str | JudgeModel,
    model_options: Mapping[str, Any] | None,
    scale: float,
    items_key: str,
    extract: PromptStep,
    analyze_description: str,
    analyze_prompt: Callable[[StepContext, list[Any]], str | Awaitable[str]],
    verdict_schema: type[JudgeAnswer],
    score: Callable[[int, Sequence[Any]], float],
    facts: Callable[[StepContext, ItemVerdicts], str],
    no_items_note: str,
) -> Scorer:
    """An item-verdict scorer (see the module docstring). `extract` lists the items under
    `items_key`; `analyze_prompt(ctx, items)` asks for their verdicts; `score(items, verdicts)`
    is the scorer's formula; `facts` what the reason prompt states; `no_items_note` why the
    score is 0 when the output had no items."""

    def listed(ctx: StepContext) -> list[Any]:
        return items_of(ctx.results.preprocess_step_result, items_key)

    def score_verdicts(ctx: StepContext) -> float:
        return score(len(listed(ctx)), items_of(ctx.results.analyze_step_result, "verdicts"))

    def explain(ctx: StepContext) -> Reason:
        judged = ItemVerdicts.of(ctx, items_key)
        return Reason(facts(ctx, judged), None if judged.items else no_items_note)

    return judged_scorer(
        card,
        model=model,
        model_options=model_options,
        scale=scale,
        preprocess=extract,
        analyze=PromptStep(
            description=analyze_description,
            create_prompt=lambda ctx: analyze_prompt(ctx, listed(ctx)),
            output_schema=verdict_schema,
        ),
        score=score_verdicts,
        explain=explain,
    )
