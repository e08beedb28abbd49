"""Which client serves a judge: scorewatch's own OpenAI-compatible client, or litellm.

`transport="auto"` (the default) takes the fast path (`"openai_http"`) when the model is an
OpenAI chat-completions model (`openai/<name>`, with or without `api_base`: OpenAI, vLLM,
Ollama, a LiteLLM proxy, any server speaking the API) and every option is one the fast path
sends as is. Anything else goes through litellm (`"litellm"`): other providers, Azure, options
litellm translates (`drop_params`, `max_tokens` on reasoning models, ...). The choice is made
once, at construction, and shows in the judge record and on the judge's span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["FAST_OPTIONS", "Transport", "TransportChoice", "choose_transport"]

Transport = Literal["litellm", "openai_http"]
TransportChoice = Literal["auto", "litellm", "openai_http"]

_TRANSPORT_OPTIONS = frozenset(
    {"api_base", "base_url", "api_key", "organization", "headers", "extra_headers", "extra_body"}
)
BODY_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "reasoning_effort",
        "service_tier",
        "metadata",
        "store",
        "verbosity",
    }
)
FAST_OPTIONS = _TRANSPORT_OPTIONS | BODY_OPTIONS | {"custom_llm_provider"}
"""Options the fast path sends as they are; any other option needs litellm."""

# litellm rewrites these for OpenAI's reasoning models (max_tokens -> max_completion_tokens,
# an unsupported temperature dropped); the fast path would send them as given.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_TRANSLATED_FOR_REASONING = frozenset({"max_tokens", "temperature", "top_p"})


def _why_not_fast(model: str, provider: str | None, options: Mapping[str, Any]) -> str | None:
    if provider != "openai":
        return f"provider {provider or 'unknown'!r} is not 'openai'"
    unknown = sorted(set(options) - FAST_OPTIONS)
    if unknown:
        return f"option(s) {', '.join(unknown)} need litellm"
    name = model.rpartition("/")[2]
    if name.startswith(_REASONING_PREFIXES) and _TRANSLATED_FOR_REASONING & set(options):
        return "litellm translates max_tokens/temperature/top_p for reasoning models"
    return None


def choose_transport(
    choice: str, model: str, provider: str | None, options: Mapping[str, Any]
) -> Transport:
    if choice == "litellm":
        return "litellm"
    if choice not in ("auto", "openai_http"):
        raise ValueError(f"transport must be 'auto', 'litellm' or 'openai_http', got {choice!r}")
    reason = _why_not_fast(model, provider, options)
    if reason is None:
        return "openai_http"
    if choice == "openai_http":
        raise ValueError(f"transport='openai_http' cannot serve model {model!r}: {reason}")
    return "litellm"
