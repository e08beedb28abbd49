"""Values in a form every sink stores: what `storable` makes of JSON-like data."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REPLACEMENT", "storable", "storable_text"]

# Text no sink can hold as it is: NUL (PostgreSQL text and jsonb refuse it) and unpaired
# surrogates (not encodable as UTF-8, so neither SQLite, a file nor PostgreSQL takes them).
_UNSTORABLE_TEXT: Final = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT: Final = "\ufffd"
_NON_FINITE: Final = {math.inf: "Infinity", -math.inf: "-Infinity"}


def storable_text(value: str) -> str:
    """`value` with NUL and unpaired surrogates replaced by U+FFFD."""
    if _UNSTORABLE_TEXT.search(value) is None:
        return value
    return _UNSTORABLE_TEXT.sub(REPLACEMENT, value)


def storable(value: Any) -> Any:
    """`value` (JSON-like data, as `ScoreRecord.to_row()` makes it) in a form every sink stores:
    NUL characters and unpaired surrogates in text (keys included) become U+FFFD, and numbers
    JSON cannot write (NaN, Infinity) become the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else _NON_FINITE[value]
    if isinstance(value, Mapping):
        return {
            (storable_text(key) if isinstance(key, str) else key): storable(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value
