"""Which environment variable holds a provider's API key, and one clear line when it is missing.

A missing key must read as what it is, naming the variable and the model, not as "internal error
(HTTP 500)" retried three times (what the openai SDK's complaint looks like through litellm).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "KEY_VARIABLES",
    "key_from_environment",
    "key_hint",
    "mentions_missing_key",
    "missing_key_message",
]

KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "azure": ("AZURE_API_KEY",),
}
# The openai SDK refuses to send a request without a key, whatever the api_base: so does the
# fast path, so both paths fail the same way before any request.
_ALWAYS_NEEDS_KEY = frozenset({"openai"})
_MISSING_MARKERS = re.compile(
    r"missing credentials|api_key client option must be set|missing [a-z ]*api key",
    re.IGNORECASE,
)


def _has_explicit_key(options: Mapping[str, Any]) -> bool:
    key = options.get("api_key")
    return isinstance(key, str) and bool(key.strip())


def key_hint(
    provider: str | None, options: Mapping[str, Any], key_env: str | None = None
) -> str | None:
    """Where this judge's key comes from, for an error message: the variable `api_key_env`
    names, the option, or the provider's variable."""
    if key_env:
        return f"{key_env} (named by api_key_env)"
    if _has_explicit_key(options):
        return "the api_key option"
    names = KEY_VARIABLES.get(provider or "")
    return " or ".join(names) if names else None


def missing_key_message(
    model: str,
    provider: str | None,
    options: Mapping[str, Any],
    *,
    strict: bool = False,
    key_env: str | None = None,
) -> str | None:
    """One line naming the variable and the model when the key is certainly missing, else None.

    `strict=False` covers every provider in the table (for warnings and `serve --check`);
    `strict=True` only providers whose client refuses to call without a key (for failing a call
    before it is made). `key_env` is the variable `api_key_env` names (its value, when set, is
    the `api_key` option already): unset, the provider's own variable stands in if it is set.
    """
    if _has_explicit_key(options):
        return None
    if strict and provider not in _ALWAYS_NEEDS_KEY:
        return None
    names = KEY_VARIABLES.get(provider or "")
    if names and any(os.environ.get(name, "").strip() for name in names):
        return None
    if key_env:
        return f"judge model {model!r} has no API key: set {key_env} (named by api_key_env)"
    if not names:
        return None
    return f"judge model {model!r} has no API key: set {' or '.join(names)} (or pass api_key)"


def key_from_environment(key_env: str) -> str | None:
    """The value of the variable `api_key_env` names, None when it is unset or blank."""
    value = os.environ.get(key_env, "").strip()
    return value or None


def mentions_missing_key(error: BaseException) -> bool:
    """Whether a provider client's exception says the key is missing (read, never copied)."""
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 4:
        if _MISSING_MARKERS.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
        seen += 1
    return False
