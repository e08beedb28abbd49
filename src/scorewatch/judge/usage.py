"""Token usage as the judge record holds it: normalized, numeric keys only, summed per key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .wire import WireModel

__all__ = ["JudgeUsage", "add_usage", "normalize_usage"]

_USAGE_ALIASES: dict[str, tuple[str, ...]] = {
    "input_tokens": ("input_tokens", "inputTokens", "prompt_tokens", "promptTokens"),
    "output_tokens": ("output_tokens", "outputTokens", "completion_tokens", "completionTokens"),
    "total_tokens": ("total_tokens", "totalTokens"),
    "reasoning_tokens": ("reasoning_tokens", "reasoningTokens"),
    "cached_input_tokens": ("cached_input_tokens", "cachedInputTokens"),
    "cache_creation_input_tokens": ("cache_creation_input_tokens", "cacheCreationInputTokens"),
}

# Where providers nest the finer counts (OpenAI's `*_tokens_details`, the Responses API's
# `*_tokens_details`, Anthropic's `cache_read_input_tokens`), tried when no flat key is present.
_NESTED_USAGE: dict[str, tuple[tuple[str, ...], ...]] = {
    "reasoning_tokens": (
        ("completion_tokens_details", "reasoning_tokens"),
        ("output_tokens_details", "reasoning_tokens"),
        ("completionTokensDetails", "reasoningTokens"),
    ),
    "cached_input_tokens": (
        ("prompt_tokens_details", "cached_tokens"),
        ("input_tokens_details", "cached_tokens"),
        ("promptTokensDetails", "cachedTokens"),
        ("cache_read_input_tokens",),
    ),
    "cache_creation_input_tokens": (
        ("prompt_tokens_details", "cache_creation_tokens"),
        ("input_tokens_details", "cache_creation_tokens"),
    ),
}


class JudgeUsage(WireModel):
    """Tokens of one judge execution (summed across its attempts). Every key is optional."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None

    def is_empty(self) -> bool:
        return all(getattr(self, key) is None for key in _USAGE_ALIASES)

    def as_dict(self) -> dict[str, int]:
        """The numeric keys only, snake_case."""
        return {key: value for key in _USAGE_ALIASES if (value := getattr(self, key)) is not None}


EMPTY_USAGE = JudgeUsage()


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return int(value)
    except (ValueError, OverflowError):  # NaN, infinities
        return None


def _nested_number(raw: Mapping[str, Any], paths: tuple[tuple[str, ...], ...]) -> int | None:
    for path in paths:
        node: Any = raw
        for part in path:
            node = node.get(part) if isinstance(node, Mapping) else None
        number = _number(node)
        if number is not None:
            return number
    return None


def normalize_usage(raw: Any) -> JudgeUsage:
    """Normalize a provider usage block (`promptTokens`/`completionTokens` or the modern names).

    Flat keys win; finer counts nested the way OpenAI and Anthropic report them
    (`prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`,
    `cache_read_input_tokens`) fill the gaps. A missing total is computed from input + output
    when either side is known; a non-mapping gives empty usage. Only numeric keys survive.
    """
    if isinstance(raw, JudgeUsage):
        return raw
    if not isinstance(raw, Mapping):
        return EMPTY_USAGE
    values: dict[str, int] = {}
    for key, aliases in _USAGE_ALIASES.items():
        for alias in aliases:
            number = _number(raw.get(alias))
            if number is not None:
                values[key] = number
                break
        else:
            number = _nested_number(raw, _NESTED_USAGE.get(key, ()))
            if number is not None:
                values[key] = number
    if "total_tokens" not in values and ("input_tokens" in values or "output_tokens" in values):
        values["total_tokens"] = values.get("input_tokens", 0) + values.get("output_tokens", 0)
    return JudgeUsage(**values) if values else EMPTY_USAGE


def add_usage(left: JudgeUsage, right: JudgeUsage) -> JudgeUsage:
    """Per-key sum over the keys present on either side."""
    if right.is_empty():
        return left
    if left.is_empty():
        return right
    merged = left.as_dict()
    for key, value in right.as_dict().items():
        merged[key] = merged.get(key, 0) + value
    return JudgeUsage(**merged)
