"""The model boundary: what a judge is asked, what it answers, and the protocol it implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .usage import EMPTY_USAGE, JudgeUsage
from .wire import WireModel

__all__ = [
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
    `estimated_cost_usd` is a price-table estimate, for telemetry only.
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
