"""Reading a chat completion into a `JudgeReply`, the same way whichever client fetched it.

litellm hands back objects (`ModelResponse`, stream chunks), the fast path plain JSON mappings;
every field is read through `_get`, so both paths fill the judge record from one code path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import JudgeError
from .protocol import JudgeCost, JudgeReply
from .structured import Placement
from .usage import EMPTY_USAGE, normalize_usage

__all__ = ["ReplyShape", "StreamState", "completion_fields", "provider_cost"]


def _get(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _first(items: Any) -> Any:
    if isinstance(items, list | tuple) and items:
        return items[0]
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(getattr(part, "text", ""))
            for part in content
        )
    return ""


def as_mapping(value: Any) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump()
        except Exception:
            return None
        return dumped if isinstance(dumped, Mapping) else None
    return None


def provider_cost(response: Any, usage_block: Mapping[str, Any] | None) -> float | None:
    """The cost the provider itself reported in its usage block, if it did.

    When litellm writes its own computed bill into `usage.cost` (it does on streams), it keeps
    the upstream figure in `_hidden_params["upstream_usage_cost"]`; that one is authoritative.
    """
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, Mapping) and "upstream_usage_cost" in hidden:
        value: Any = hidden["upstream_usage_cost"]
    else:
        value = usage_block.get("cost") if usage_block else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    amount = float(value)
    return amount if amount == amount and amount >= 0 else None


class ReplyShape:
    """What one completion (or one finished stream) delivered, before pricing."""

    __slots__ = (
        "finish_reason",
        "provider_cost",
        "response_id",
        "response_model",
        "text",
        "usage_block",
    )

    def __init__(
        self,
        *,
        text: str,
        finish_reason: Any,
        usage_block: Mapping[str, Any] | None,
        provider_cost: float | None,
        response_id: Any,
        response_model: Any,
    ) -> None:
        self.text = text
        self.finish_reason = finish_reason if isinstance(finish_reason, str) else None
        self.usage_block = usage_block
        self.provider_cost = provider_cost
        self.response_id = response_id if isinstance(response_id, str) else None
        self.response_model = response_model if isinstance(response_model, str) else None

    def reply(
        self,
        *,
        estimate: Any,
        server: tuple[str | None, int | None],
        placement: Placement,
        streamed: bool,
        transport: str,
    ) -> JudgeReply:
        """The reply; `estimate(usage)` prices the usage from the price table."""
        usage = normalize_usage(self.usage_block) if self.usage_block else EMPTY_USAGE
        if not any(usage.as_dict().values()):
            # litellm fills in zeros when the provider sent no usage block: that is "unknown".
            usage = EMPTY_USAGE
        cost = self.provider_cost
        reported = None if cost is None else JudgeCost(amount=cost, unit="USD", source="provider")
        return JudgeReply(
            text=self.text,
            usage=usage,
            finish_reason=self.finish_reason,
            model_call_count=1,
            response_model=self.response_model,
            response_id=self.response_id,
            cost=reported,
            estimated_cost_usd=estimate(usage),
            server_address=server[0],
            server_port=server[1],
            metadata={"structured_output": placement, "streamed": streamed, "transport": transport},
        )


def completion_fields(response: Any) -> ReplyShape:
    """The fields of a non-streamed chat completion (object or JSON mapping)."""
    choice = _first(_get(response, "choices"))
    message = _get(choice, "message")
    usage_block = as_mapping(_get(response, "usage"))
    return ReplyShape(
        text=_text(_get(message, "content")),
        finish_reason=_get(choice, "finish_reason"),
        usage_block=usage_block,
        provider_cost=provider_cost(response, usage_block),
        response_id=_get(response, "id"),
        response_model=_get(response, "model"),
    )


class StreamState:
    """What a streamed answer delivered so far, kept as evidence if the stream then fails."""

    __slots__ = (
        "finish_reason",
        "parts",
        "provider_cost",
        "response_id",
        "response_model",
        "usage_block",
    )

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage_block: Mapping[str, Any] | None = None
        self.provider_cost: float | None = None
        self.response_id: str | None = None
        self.response_model: str | None = None

    def add(self, chunk: Any) -> None:
        self.response_id = self.response_id or _get(chunk, "id")
        self.response_model = self.response_model or _get(chunk, "model")
        for choice in _get(chunk, "choices") or ():
            content = _get(_get(choice, "delta"), "content")
            if isinstance(content, str):
                self.parts.append(content)
            reason = _get(choice, "finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        usage = as_mapping(_get(chunk, "usage"))
        if usage:
            self.usage_block = usage
            self.provider_cost = provider_cost(chunk, usage)

    def shape(self) -> ReplyShape:
        return ReplyShape(
            text="".join(self.parts),
            finish_reason=self.finish_reason,
            usage_block=self.usage_block,
            provider_cost=self.provider_cost,
            response_id=self.response_id,
            response_model=self.response_model,
        )

    def attach(self, error: JudgeError) -> JudgeError:
        """Let the judge record count a stream that reached the model before it broke."""
        text = "".join(self.parts)
        usage = normalize_usage(self.usage_block) if self.usage_block else EMPTY_USAGE
        if text or not usage.is_empty():
            error.text = text or None
            error.usage = None if usage.is_empty() else usage
            error.model_call_count = 1
        return error
