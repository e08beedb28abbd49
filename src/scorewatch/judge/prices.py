"""What litellm's model table says about a judge model, read once per model and kept.

litellm's per-call cost calculator costs about a third of a millisecond of CPU per call; the
judge needs only the model's per-token prices, so it reads them once from litellm's table
(`litellm.model_cost`, which `litellm.register_model` extends) and does the arithmetic itself.
An entry is read again only when the table has grown since (a model registered later is found).

litellm is imported with its bundled price table (`LITELLM_LOCAL_MODEL_COST_MAP=True`) unless the
environment says otherwise: a judge that stalls for seconds fetching prices from the internet
when the network is down is a defect.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .usage import JudgeUsage

__all__ = [
    "BATCH_DISCOUNT",
    "ModelFacts",
    "batch_facts",
    "estimate_cost",
    "import_litellm",
    "model_facts",
    "offline_by_default",
]

_lock = threading.Lock()


def offline_by_default() -> None:
    """Make litellm use its bundled price table unless the environment already says otherwise
    (`LITELLM_LOCAL_MODEL_COST_MAP=False` keeps litellm's fetch from the internet)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def import_litellm() -> Any:
    """litellm, imported offline by default and with its debug banner off."""
    offline_by_default()
    import litellm

    # litellm prints a "Give Feedback / Get Help" banner to stdout on every failed call.
    litellm.suppress_debug_info = True
    return litellm


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """Per-token prices in USD (None: the table has no price) and structured-output support."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_creation: float | None = None
    reasoning: float | None = None
    supports_response_schema: bool = False
    batch_input: float | None = None
    """The table's price per input token through the provider's batch interface, when it has
    one (`input_cost_per_token_batches`); `batch_output` likewise."""
    batch_output: float | None = None

    @property
    def priced(self) -> bool:
        return self.input is not None and self.output is not None


BATCH_DISCOUNT = 0.5
"""What a token costs through OpenAI's Batch API relative to a direct call, for a model whose
table entry has no batch prices: "50% cost discount compared to synchronous APIs"
(https://platform.openai.com/docs/guides/batch)."""

_UNKNOWN = ModelFacts()
_cache: dict[tuple[str, str | None], tuple[int, ModelFacts]] = {}


def _price(info: Mapping[str, Any], key: str) -> float | None:
    value = info.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and number >= 0 else None


def _read(litellm: Any, model: str, provider: str | None) -> ModelFacts:
    try:
        info = litellm.get_model_info(model=model, custom_llm_provider=provider)
    except Exception:  # not in the table
        info = None
    try:
        schema = bool(litellm.supports_response_schema(model=model, custom_llm_provider=provider))
    except Exception:  # an unknown model or provider: ask in the prompt instead
        schema = False
    if not isinstance(info, Mapping):
        return ModelFacts(supports_response_schema=schema)
    return ModelFacts(
        input=_price(info, "input_cost_per_token"),
        output=_price(info, "output_cost_per_token"),
        cache_read=_price(info, "cache_read_input_token_cost"),
        cache_creation=_price(info, "cache_creation_input_token_cost"),
        reasoning=_price(info, "output_cost_per_reasoning_token"),
        supports_response_schema=schema,
        batch_input=_price(info, "input_cost_per_token_batches"),
        batch_output=_price(info, "output_cost_per_token_batches"),
    )


def model_facts(litellm: Any, model: str, provider: str | None = None) -> ModelFacts:
    """The table's facts about `model`, looked up once (again only after the table grew)."""
    table = getattr(litellm, "model_cost", None)
    version = len(table) if isinstance(table, Mapping) else 0
    key = (model, provider)
    cached = _cache.get(key)
    if cached is not None and cached[0] == version:
        return cached[1]
    facts = _read(litellm, model, provider)
    with _lock:
        _cache[key] = (version, facts)
    return facts


def estimate_cost(facts: ModelFacts, usage: JudgeUsage) -> float | None:
    """The price-table cost of `usage`: cache reads and writes and reasoning tokens priced at
    their own rates when the table has them (as litellm's calculator does for chat models),
    tiered and per-modality prices ignored. None when the model has no price or no tokens."""
    if not facts.priced or (usage.input_tokens is None and usage.output_tokens is None):
        return None
    assert facts.input is not None and facts.output is not None
    prompt = usage.input_tokens or 0
    cached = usage.cached_input_tokens or 0
    created = usage.cache_creation_input_tokens or 0
    uncached = max(prompt - cached - created, 0)
    total = uncached * facts.input
    total += cached * (facts.cache_read if facts.cache_read is not None else facts.input)
    total += created * (facts.cache_creation if facts.cache_creation is not None else facts.input)
    completion = usage.output_tokens or 0
    reasoning = usage.reasoning_tokens or 0
    if facts.reasoning is not None and 0 < reasoning <= completion:
        total += reasoning * facts.reasoning + (completion - reasoning) * facts.output
    else:
        total += completion * facts.output
    return total if total == total and total >= 0 else None


def batch_facts(facts: ModelFacts) -> tuple[ModelFacts, str]:
    """`facts` with the prices of a call through the batch interface, and where they come
    from: the table's own batch prices (`"price table (batches)"`) when it has both, else every
    per-token price times `BATCH_DISCOUNT` (`"price table x 0.5 (Batch API discount)"`)."""
    if facts.batch_input is not None and facts.batch_output is not None:
        ratio = facts.batch_input / facts.input if facts.input else BATCH_DISCOUNT
        batch = ModelFacts(
            input=facts.batch_input,
            output=facts.batch_output,
            cache_read=None if facts.cache_read is None else facts.cache_read * ratio,
            cache_creation=None if facts.cache_creation is None else facts.cache_creation * ratio,
            reasoning=None if facts.reasoning is None else facts.reasoning * ratio,
            supports_response_schema=facts.supports_response_schema,
        )
        return batch, "price table (batches)"

    def half(price: float | None) -> float | None:
        return None if price is None else price * BATCH_DISCOUNT

    batch = ModelFacts(
        input=half(facts.input),
        output=half(facts.output),
        cache_read=half(facts.cache_read),
        cache_creation=half(facts.cache_creation),
        reasoning=half(facts.reasoning),
        supports_response_schema=facts.supports_response_schema,
    )
    return batch, f"price table x {BATCH_DISCOUNT:g} (Batch API discount)"


def _clear_cache() -> None:
    """For tests that change a model's price in place."""
    with _lock:
        _cache.clear()
