"""What scoring a dataset would cost, found without calling any judge (`eval --estimate`).

Every scorer runs on every item as it would for real, but each judge request is answered by a
stand-in (core/judge_standin.py) that counts it: the prompt tokens of the messages the judge
would receive, counted with the model's own tokenizer by `litellm.token_counter` (tiktoken for
OpenAI models; litellm's default encoding for models it has no tokenizer for), and the completion
tokens to expect. Those come from `history` (the mean output tokens of earlier judge records of
the same scorer version and step) when it knows the step, else from the step's schema: the
tokens of the smallest answer the schema allows, or `TEXT_ANSWER_TOKENS` for a free-text step.
The stand-in answers with that smallest answer so the scorer goes on to its next steps; a step
whose own checks refuse it ends that run's estimate there (counted in `unfollowed`).

Prices are litellm's bundled price table (never fetched), named with litellm's version and the
table file's date in `price_source`.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from ..core.events import Observers, observed_by
from ..core.judge_standin import judging_with
from ..core.scorer import Scorer
from ..judge.prices import batch_facts, estimate_cost, import_litellm, model_facts
from ..judge.protocol import JudgeModel, JudgeReply, JudgeRequest
from ..judge.structured import render_messages
from ..judge.usage import JudgeUsage
from .data import is_trajectory_scorer, validate_items
from .run import repeats_of

__all__ = [
    "TEXT_ANSWER_TOKENS",
    "CostEstimate",
    "ScorerEstimate",
    "estimate_scoring",
    "price_source",
    "smallest_instance",
]

TEXT_ANSWER_TOKENS: Final = 120
"""Completion tokens expected of a free-text step (a reason) with no history: a few sentences."""


@dataclass
class ScorerEstimate:
    """One scorer's expected judge work over the dataset."""

    judge_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: float = 0.0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Calls to a model the price table has no price for (not in `cost_usd`)."""
    unfollowed: int = 0
    """Runs whose estimate stopped early: a step refused the stand-in answer."""
    completion_sources: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)

    def add(self, other: ScorerEstimate, times: int = 1) -> None:
        """Count `other` `times` over (its stopped runs once: they stopped the same way)."""
        self.judge_calls += other.judge_calls * times
        self.prompt_tokens += other.prompt_tokens * times
        self.completion_tokens += other.completion_tokens * times
        self.cost_usd += other.cost_usd * times
        self.unpriced_calls += other.unpriced_calls * times
        self.unfollowed += other.unfollowed
        self.completion_sources |= other.completion_sources
        self.models |= other.models


@dataclass
class CostEstimate:
    scorers: dict[str, ScorerEstimate]
    price_source: str

    @property
    def judge_calls(self) -> int:
        return sum(s.judge_calls for s in self.scorers.values())

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.scorers.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "judge_calls": self.judge_calls,
            "cost_usd": self.cost_usd,
            "price_source": self.price_source,
            "scorers": {
                scorer_id: {
                    "judge_calls": s.judge_calls,
                    "prompt_tokens": s.prompt_tokens,
                    "completion_tokens": round(s.completion_tokens),
                    "completion_tokens_from": sorted(s.completion_sources),
                    "cost_usd": s.cost_usd,
                    "unpriced_calls": s.unpriced_calls,
                    "unfollowed_runs": s.unfollowed,
                    "models": sorted(s.models),
                }
                for scorer_id, s in self.scorers.items()
            },
        }


def price_source() -> str:
    """Which price table prices the estimate: litellm's bundled one, its version and date."""
    litellm = import_litellm()
    version = importlib.metadata.version("litellm")
    table = os.path.join(
        os.path.dirname(litellm.__file__), "model_prices_and_context_window_backup.json"
    )
    try:
        dated = datetime.fromtimestamp(os.path.getmtime(table), UTC).date().isoformat()
    except OSError:
        dated = "unknown date"
    return f"litellm {version} bundled price table ({dated})"


def smallest_instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """The smallest value `schema` allows, as far as its type keywords say: required properties
    only, empty arrays (or `minItems` items), the first enum value, zero, false, ""."""
    root = root or schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return smallest_instance(target, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return smallest_instance(options[0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {
            name: smallest_instance(properties.get(name, {}), root)
            for name in schema.get("required") or []
        }
    if kind == "array":
        count = int(schema.get("minItems") or 0)
        return [smallest_instance(schema.get("items") or {}, root) for _ in range(count)]
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return low if isinstance(low, int | float) else 0
    if kind == "boolean":
        return False
    if kind == "string":
        return "x" * int(schema.get("minLength") or 0)
    return None


class _Counter:
    """The stand-in judge of one scorer's runs."""

    def __init__(self, estimate: ScorerEstimate, history: Mapping[str, float], batch: bool) -> None:
        self.estimate = estimate
        self.history = history
        self.batch = batch
        self.litellm = import_litellm()

    async def __call__(self, model: JudgeModel, request: JudgeRequest) -> JudgeReply:
        # A native schema (response_format) is counted as the prompt's JSON instruction: the
        # provider bills its tokens too.
        messages = render_messages(request, "system")
        prompt_tokens = int(self.litellm.token_counter(model=model.model_id, messages=messages))
        answer = "x" if request.schema is None else json.dumps(smallest_instance(request.schema))
        if request.step in self.history:
            completion, source = self.history[request.step], "history"
        elif request.schema is None:
            completion, source = float(TEXT_ANSWER_TOKENS), "default"
        else:
            completion = float(self.litellm.token_counter(model=model.model_id, text=answer))
            source = "schema"
        estimate = self.estimate
        estimate.judge_calls += 1
        estimate.prompt_tokens += prompt_tokens
        estimate.completion_tokens += completion
        estimate.completion_sources.add(source)
        estimate.models.add(model.model_id)
        usage = JudgeUsage(input_tokens=prompt_tokens, output_tokens=round(completion))
        facts = model_facts(self.litellm, model.model_id, model.provider)
        if self.batch:
            facts, _ = batch_facts(facts)
        cost = estimate_cost(facts, usage)
        if cost is None:
            estimate.unpriced_calls += 1
        else:
            estimate.cost_usd += cost
        return JudgeReply(text=answer, usage=usage)


async def estimate_scoring(
    data: Sequence[Mapping[str, Any]],
    scorers: Sequence[Scorer],
    *,
    repeat: int = 1,
    history: Mapping[str, Mapping[str, float]] | None = None,
    batch: bool = False,
) -> CostEstimate:
    """The judge calls, tokens and cost of scoring `data` (items with their `output`) with
    `scorers`, `repeat` times per LLM-judged scorer, without calling any judge. `history` maps a
    scorer id to its steps' mean completion tokens. `batch` prices the calls as the Batch API
    bills them (`prices.batch_facts`)."""
    items = validate_items(data, has_target=False)
    found: dict[str, ScorerEstimate] = {}
    for scorer in scorers:
        estimate = found.setdefault(scorer.id, ScorerEstimate())
        steps = (history or {}).get(scorer.id, {})
        times = repeats_of(scorer, repeat)
        for item in items:
            one = ScorerEstimate()  # one judgement of the item; every repeat asks the same
            # A silent bus: stand-in answers are not judge calls, telemetry never hears them.
            with judging_with(_Counter(one, steps, batch)), observed_by(Observers()):
                try:
                    await scorer.run(
                        item.scorer_run(item.call.output, trajectory=is_trajectory_scorer(scorer))
                    )
                except Exception:
                    one.unfollowed += 1
            estimate.add(one, times)
    source = price_source()
    if batch:
        source += "; at Batch API prices (the table's *_batches prices, else x 0.5)"
    return CostEstimate(found, source)
