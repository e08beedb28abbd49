"""Keep credentials that ride along in a request context out of stored score rows.

Agents often carry an `Authorization` header or an API key in their request context; a score
row has no use for it. Values under secret-looking keys are replaced, at any depth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REDACTED", "is_secret_key", "redact_secrets"]

REDACTED: Final = "[redacted]"
_SECRET_WORD = re.compile(
    r"(^|_)(password|passwd|secret|token|api_?key|authorization|auth|credentials?|cookie|"
    r"private_?key|session_?id)($|_)"
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_secret_key(key: str) -> bool:
    """`apiKey`, `X-API-Key`, `access_token`, `Authorization`: yes. `author`, `tokens_used`: no."""
    words = _CAMEL_BOUNDARY.sub("_", key).lower().replace("-", "_").replace(".", "_")
    return _SECRET_WORD.search(words) is not None


_MAX_DEPTH: Final = 16


def redact_secrets(value: Any, depth: int = 0) -> Any:
    """A copy of `value` (JSON-like data) with secret-looking keys' values replaced."""
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if isinstance(key, str) and is_secret_key(key)
            else redact_secrets(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_secrets(item, depth + 1) for item in value]
    return value
