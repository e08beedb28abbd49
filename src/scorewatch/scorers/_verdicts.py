"""Reading a judge's verdicts, scoring them, and the item-verdict scorer built on them.

An item-verdict scorer (faithfulness, hallucination, answer relevancy, bias, context recall)
runs, with the reference system's step-result keys:

1. preprocess (judge): the items of the output - claims, statements, opinions - under one key;
2. analyze (judge): a list of labelled verdicts (`{"verdicts": [{"verdict", "reason"}]}`, or
   `{"results": [{"result", "reason"}]}` for answer relevancy and bias);
3. generate_score (function): the credit of the labels / the number of verdicts RETURNED x
   `scale`, rounded half up to two decimals; no verdicts -> 0 (the reference's denominator);
4. generate_reason (judge): the facts the scorer states about its verdicts.

Labels are compared trimmed and lower-cased (`" Yes"` counts as `"yes"`), a deliberate
difference: the reference compares some labels exactly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard
from ._context_options import ContextSettings
from ._judging import JudgeAnswer, Reason, bullets, field_of, items_of, judged_scorer
from ._text import ContextExtractor, js_lower, js_trim, resolve_context, response_text
from .utils import round_to_two_decimals

__all__ = [
    "CLAIMS_STEP",
    "RESULTS_FORMAT",
    "VERDICTS_FORMAT",
    "ClaimList",
    "ItemVerdicts",
    "ResultList",
    "VerdictList",
    "by_position",
    "claims_prompt",
    "context_claims_scorer",
    "flagged_facts",
    "flagged_items_facts",
    "item_verdict_scorer",
    "judged_against_context",
    "label_of",
    "labels_of",
    "output_items_step",
    "verdict_share",
    "weight_of",
]


def label_of(entry: Any, name: str = "verdict") -> str:
    """A verdict label, trimmed as JavaScript trims (a byte-order mark included) and lower-cased
    (`" Yes"` counts as `"yes"`)."""
    value = field_of(entry, name)
    return js_lower(js_trim(value)) if isinstance(value, str) else ""


def weight_of(entry: Any, name: str, weights: Mapping[str, float]) -> float:
    """What the label under `name` weighs in `weights`; a missing or unknown label weighs 0."""
    return weights.get(label_of(entry, name), 0.0)


def labels_of(entries: Sequence[Any], name: str = "verdict") -> list[str]:
    return [label_of(entry, name) for entry in entries]


def by_position(count: int, entries: Sequence[Any]) -> list[Any]:
    """The entry for each of `count` items, matched by position: extra entries are dropped, a
    missing one is None."""
    matched = list(entries[:count])
    return matched + [None] * (count - len(matched))


# --------------------------------------------------------------------------------------------
# verdict schemas: the reference system's keys


class Verdict(JudgeAnswer):
    verdict: str
    reason: str = ""


class VerdictList(JudgeAnswer):
    verdicts: list[Verdict]


class Result(JudgeAnswer):
    result: str
    reason: str = ""


class ResultList(JudgeAnswer):
    results: list[Result]


VERDICTS_FORMAT = '{"verdicts":[{"verdict":str,"reason":str}]}'
RESULTS_FORMAT = '{"results":[{"result":str,"reason":str}]}'


# --------------------------------------------------------------------------------------------
# scoring


def _yes_count(labels: Sequence[str]) -> float:
    return labels.count("yes")


def verdict_share(
    verdicts: Sequence[Any],
    scale: float,
    credit: Callable[[list[str]], float] = _yes_count,
    name: str = "verdict",
) -> float:
    """`credit` of the verdicts' labels / the number of verdicts x scale, rounded; 0 without
    verdicts."""
    if not verdicts:
        return 0
    return round_to_two_decimals(credit(labels_of(verdicts, name)) / len(verdicts) * scale)


@dataclass(frozen=True, slots=True)
class ItemVerdicts:
    """The items a scorer extracted and the labels of the verdicts the judge returned, paired
    by position for the reason prompt (a missing verdict shows as `no verdict`)."""

    items: list[str]
    labels: list[str]

    @classmethod
    def of(cls, ctx: StepContext, key: str, verdicts_key: str, label: str) -> ItemVerdicts:
        items = [str(item) for item in items_of(ctx.results.preprocess_step_result, key)]
        verdicts = items_of(ctx.results.analyze_step_result, verdicts_key)
        return cls(items, labels_of(verdicts, label))

    def count(self, label: str) -> int:
        return self.labels.count(label)

    def _paired(self) -> list[tuple[str, str]]:
        size = max(len(self.items), len(self.labels))
        items = self.items + [f"(verdict {n})" for n in range(len(self.items), size)]
        labels = self.labels + [""] * (size - len(self.labels))
        return list(zip(items, labels, strict=True))

    def labelled(self, label: str) -> list[str]:
        """The items that got `label`."""
        return [item for item, got in self._paired() if got == label]

    def others(self, label: str) -> list[str]:
        """The items that did not get `label`, each followed by the label it got."""
        return [f"{item} ({got or 'no verdict'})" for item, got in self._paired() if got != label]


def flagged_facts(output: str, total: int, items: str, flag: str, flagged: Sequence[str]) -> str:
    """The reason facts of a lower-is-better share: the output, how many of its `items` were
    judged and flagged (`"claims"`, `"hallucinated"`), and which."""
    return (
        f"Output:\n{output}\n\n"
        f"{items.capitalize()} judged: {total}, {flag}: {len(flagged)} (a higher score is worse)\n"
        f"{flag.capitalize()} {items}:\n{bullets(flagged)}"
    )


# --------------------------------------------------------------------------------------------
# the item-verdict scorer


class ClaimList(JudgeAnswer):
    claims: list[str]


def claims_prompt(output: str, what: str = "output") -> str:
    """Preprocess of the claim-based scorers: the atomic factual claims of a text."""
    return f"""Extract the factual claims of the {what} below.
Split it into atomic claims, one checkable fact each: split compound sentences, keep numbers, \
dates, names and quantities, resolve pronouns. Skip questions, greetings, opinions about style \
and statements about the conversation itself. Return an empty list if there are none.

{what.capitalize()}:
{output}

Format: {{"claims":[str]}}
Example: "Paris, the capital of France, has 2.1 million people." -> \
{{"claims":["Paris is the capital of France","Paris has 2.1 million people"]}}
"""


def output_items_step(
    description: str, prompt: Callable[[str], str], schema: type[JudgeAnswer]
) -> PromptStep:
    """The preprocess step of an item-verdict scorer: `prompt(the output's text)` asks the judge
    to list the output's items (claims, statements, opinions) in `schema`."""
    return PromptStep(
        description=description,
        create_prompt=lambda ctx: prompt(response_text(ctx.run.output)),
        output_schema=schema,
    )


CLAIMS_STEP = output_items_step(
    "Extract the factual claims of the output", claims_prompt, ClaimList
)


def flagged_items_facts(items: str, flag: str) -> Callable[[StepContext, ItemVerdicts], str]:
    """The `facts` of an item-verdict scorer whose `yes` verdicts flag bad items."""

    def facts(ctx: StepContext, judged: ItemVerdicts) -> str:
        output = response_text(ctx.run.output)
        return flagged_facts(output, len(judged.labels), items, flag, judged.labelled("yes"))

    return facts


def judged_against_context(
    prompt: Callable[[Sequence[str], Sequence[str]], str],
    context: Sequence[str] | None,
    context_extractor: ContextExtractor | None,
    *,
    from_tools: bool = True,
) -> Callable[[StepContext, list[Any]], Awaitable[str]]:
    """An analyze prompt, `prompt(items, context pieces)`, that judges the items against the
    context: `context_extractor(input, output)` when given (sync or async), else `context`, else
    (`from_tools`) the results of the tools the agent called."""

    async def create_prompt(ctx: StepContext, items: list[Any]) -> str:
        pieces = await resolve_context(
            ctx.run.input, ctx.run.output, context, context_extractor, from_tools=from_tools
        )
        return prompt(items, pieces)

    return create_prompt


def context_claims_scorer(
    card: ScorerCard,
    model: str | JudgeModel,
    settings: ContextSettings,
    *,
    analyze_description: str,
    analyze_prompt: Callable[[Sequence[str], Sequence[str]], str],
    verdict_schema: type[JudgeAnswer],
    score: Callable[[Sequence[Any], float], float],
    facts: Callable[[StepContext, ItemVerdicts], str],
    no_items_note: str,
    from_tools: bool = True,
) -> Scorer:
    """An item-verdict scorer of the output's factual claims (`CLAIMS_STEP`), each judged
    against the context `settings` name (`judged_against_context`): faithfulness and
    hallucination differ only in what they ask of the judge and count. `score(verdicts, scale)`
    is the formula."""
    scale = settings.scale
    return item_verdict_scorer(
        card,
        model=model,
        model_options=settings.model_options,
        scale=scale,
        items_key="claims",
        extract=CLAIMS_STEP,
        analyze_description=analyze_description,
        analyze_prompt=judged_against_context(
            analyze_prompt, settings.context, settings.context_extractor, from_tools=from_tools
        ),
        verdict_schema=verdict_schema,
        score=lambda _ctx, verdicts: score(verdicts, scale),
        facts=facts,
        no_items_note=no_items_note,
    )


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
    score: Callable[[StepContext, Sequence[Any]], Any],
    facts: Callable[[StepContext, ItemVerdicts], str],
    no_items_note: str,
    verdicts_key: str = "verdicts",
    label: str = "verdict",
) -> Scorer:
    """An item-verdict scorer (see the module docstring). `extract` lists the items under
    `items_key`; `analyze_prompt(ctx, items)` asks for their verdicts (under `verdicts_key`,
    labelled under `label`); `score(ctx, verdicts)` is the scorer's formula; `facts` what the
    reason prompt states; `no_items_note` why the score is 0 when the output had no items."""

    def listed(ctx: StepContext) -> list[Any]:
        return items_of(ctx.results.preprocess_step_result, items_key)

    def score_verdicts(ctx: StepContext) -> Any:
        return score(ctx, items_of(ctx.results.analyze_step_result, verdicts_key))

    def explain(ctx: StepContext) -> Reason:
        judged = ItemVerdicts.of(ctx, items_key, verdicts_key, label)
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
