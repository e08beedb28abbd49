"""The model boundary: what a judge is asked, what it answers, and the protocol it implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .usage import EMPTY_USAGE, JudgeUsage
from .wire import WireModel

__all__ = [
    "CostSource",
    "JsonPromptInjection",
    "JudgeCost",
    "JudgeModel",
    "JudgeReply",
    "JudgeRequest",
]

JsonPromptInjection = bool | Literal["auto", "system", "inline"]
"""How a structured answer is asked for.

`"auto"`: the provider's JSON-schema response format when the model supports it, else the schema
is described in the system instructions. `True` or `"system"`: described in the system
instructions. `"inline"`: described at the end of the user prompt. `False`: the native response
format only.
"""


CostSource = Literal["provider", "estimate"]
"""Where a reply's known cost comes from: the provider's own bill, or the price table."""


class JudgeCost(WireModel):
    """A cost the provider itself reported. Never an estimate."""

    amount: float
    unit: str
    source: str


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One call to a judge model.

    `schema` is the JSON schema the answer must satisfy, or None for a plain-text answer (the
    generate_reason step). `step` names the scorer step asking, so scripted judges can route on it.
    """

    prompt: str
    instructions: str
    step: str
    schema: dict[str, Any] | None = None
    json_prompt_injection: JsonPromptInjection = "auto"
    attempt: int = 1
    fallback: bool = False

    @property
    def structured(self) -> bool:
        return self.schema is not None


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """What one judge call returned.

    `model_call_count` counts the provider round trips behind this reply (more than one when the
    judge ran a tool loop). `cost` is set only when the provider reported an authoritative cost;
    `estimated_cost_usd` is a price-table estimate; `known_cost()` says which of the two counts.
    """

    text: str
    usage: JudgeUsage = EMPTY_USAGE
    finish_reason: str | None = "stop"
    model_call_count: int = 1
    response_model: str | None = None
    response_id: str | None = None
    cost: JudgeCost | None = None
    estimated_cost_usd: float | None = None
    server_address: str | None = None
    server_port: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def known_cost(self) -> tuple[float, str, CostSource] | None:
        """(amount, currency, source) of what this reply cost, as well as it is known: the
        provider's own figure wins over the price-table estimate (in USD); None when neither."""
        if self.cost is not None:
            return float(self.cost.amount), self.cost.unit, "provider"
        if self.estimated_cost_usd is not None:
            return float(self.estimated_cost_usd), "USD", "estimate"
        return None

    @property
    def cost_usd(self) -> float | None:
        """`known_cost()` in US dollars: None when unknown or known only in another currency.
        This is what a judge record's `estimated_cost_usd` adds up."""
        known = self.known_cost()
        return known[0] if known is not None and known[1].upper() == "USD" else None


@runtime_checkable
class JudgeModel(Protocol):
    """Anything that can answer a judge request.

    Implementations raise `scorewatch.judge.JudgeError` subclasses on failure; a reply whose text
    does not fit the schema is returned as is (the caller validates it). An implementation may
    expose a `retry_policy` attribute (`scorewatch.judge.RetryPolicy`); without one, failed calls
    are not retried, which is the reference system's accounting.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def provider(self) -> str | None: ...

    async def complete(self, request: JudgeRequest) -> JudgeReply: ...
