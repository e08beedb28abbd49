"""What a stored value may be: every sink's form of JSON-like data, credentials left out.

Two rules, applied in one walk by `storable`:
- text no sink can hold as it is, NUL (PostgreSQL text and jsonb refuse it) and unpaired
  surrogates (not encodable as UTF-8, so neither SQLite, a file nor PostgreSQL takes them),
  becomes U+FFFD, and numbers JSON cannot write (NaN, Infinity) become the strings "NaN",
  "Infinity", "-Infinity";
- with `redact=True`, values under secret-looking keys are replaced, at any depth up to
  `_MAX_DEPTH`: agents often carry an `Authorization` header or an API key in their request
  context, and a score row has no use for it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final

__all__ = ["REDACTED", "REPLACEMENT", "is_secret_key", "storable", "storable_text", "stored_json"]

_UNSTORABLE_TEXT: Final = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT: Final = "\ufffd"
REDACTED: Final = "[redacted]"
_NON_FINITE: Final = {math.inf: "Infinity", -math.inf: "-Infinity"}
_SECRET_WORD = re.compile(
    r"(^|_)(password|passwd|secret|token|api_?key|authorization|auth|credentials?|cookie|"
    r"private_?key|session_?id)($|_)"
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# The JSON text of a stored value, as every sink writes it; a partial, so a row's JSON columns
# cost no Python frame of their own.
stored_json: Final[Callable[[Any], str]] = partial(json.dumps, ensure_ascii=False, default=repr)
# Redaction looks this deep (mappings and lists count a level each); cleaning has no limit.
_MAX_DEPTH: Final = 16


def is_secret_key(key: str) -> bool:
    """`apiKey`, `X-API-Key`, `access_token`, `Authorization`: yes. `author`, `tokens_used`: no."""
    words = _CAMEL_BOUNDARY.sub("_", key).lower().replace("-", "_").replace(".", "_")
    return _SECRET_WORD.search(words) is not None


def storable_text(value: str) -> str:
    """`value` with NUL and unpaired surrogates replaced by U+FFFD."""
    if _UNSTORABLE_TEXT.search(value) is None:
        return value
    return _UNSTORABLE_TEXT.sub(REPLACEMENT, value)


def _number(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else _NON_FINITE[value]


def storable(value: Any, *, redact: bool = False) -> Any:
    """`value` (JSON-like data, as `ScoreRecord.to_row()` builds it) in a form every sink
    stores (keys cleaned too); with `redact`, secret-looking keys' values are `REDACTED`."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float):
        return _number(value)
    return _walk(value, redact, 0)


def _walk(value: Any, redact: bool, depth: int) -> Any:
    # Text and numbers are cleaned in the loop, so a row costs one call per container rather
    # than one per value; a list's entries come with int indexes, which are never keys to clean.
    is_mapping = isinstance(value, Mapping)
    if not is_mapping and not isinstance(value, list | tuple):
        return value
    hide = is_mapping and redact and depth <= _MAX_DEPTH
    keys: list[Any] = []
    cleaned: list[Any] = []
    for key, item in value.items() if is_mapping else enumerate(value):
        if isinstance(key, str):
            if hide and is_secret_key(key):
                item = REDACTED
            if _UNSTORABLE_TEXT.search(key) is not None:
                key = _UNSTORABLE_TEXT.sub(REPLACEMENT, key)
        if isinstance(item, str):
            if _UNSTORABLE_TEXT.search(item) is not None:
                item = _UNSTORABLE_TEXT.sub(REPLACEMENT, item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                item = _number(item)
        elif isinstance(item, Mapping | list | tuple):
            item = _walk(item, redact, depth + 1)
        keys.append(key)
        cleaned.append(item)
    return dict(zip(keys, cleaned, strict=True)) if is_mapping else cleaned
