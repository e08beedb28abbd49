"""JavaScript string semantics for the model-free scorers that must return the reference
system's numbers exactly.

The reference measures strings in UTF-16 code units (`str.length`, `str[i]`), and its `\\s`,
`trim()` and `toLowerCase()` differ from Python's `str.isspace()`/`strip()` in which characters
count as white space. These helpers reproduce that, so an emoji or a non-breaking space gives
the same number in both systems.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "JS_SPACE",
    "JS_SPACES",
    "JS_SPACE_CHARS",
    "js_lower",
    "js_number",
    "js_trim",
    "utf16_len",
    "utf16_units",
]

# ECMAScript WhiteSpace + LineTerminator: what `\s` and `trim()` match. Python's `\s` adds
# U+001C..U+001F and U+0085 and lacks U+FEFF.
JS_SPACE_CHARS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_SPACE_SET = "".join(
    ["\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff"]
    + [chr(code) for code in range(0x2000, 0x200B)]
)
JS_SPACE = re.compile(f"[{JS_SPACE_CHARS}]")
JS_SPACES = re.compile(f"[{JS_SPACE_CHARS}]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def js_trim(text: str) -> str:
    """`String.prototype.trim` (`str.strip` with the JS set; a regex anchored at the end
    would rescan every inner run of white space)."""
    return text.strip(_SPACE_SET)


def js_lower(text: str) -> str:
    """`String.prototype.toLowerCase`: both apply Unicode's full lower-case mapping (final
    sigma included), so `str.lower` is the same function; `casefold` is not (`ß` -> `ss`)."""
    return text.lower()


def utf16_len(text: str) -> int:
    """`str.length`: characters outside the BMP count twice (a surrogate pair)."""
    return len(text) + len(_ASTRAL.findall(text)) if not text.isascii() else len(text)


def _has_astral(text: str) -> bool:
    return not text.isascii() and _ASTRAL.search(text) is not None


def _units(text: str) -> list[int]:
    return memoryview(text.encode("utf-16-le", "surrogatepass")).cast("H").tolist()


def utf16_units(first: str, second: str) -> tuple[Sequence[Any], Sequence[Any]]:
    """Two texts as the reference indexes them, in one representation so that they compare:
    the strings themselves when every character is one UTF-16 unit, else both as lists of
    code units (an emoji becomes two surrogates)."""
    if _has_astral(first) or _has_astral(second):
        return _units(first), _units(second)
    return first, second


def js_number(value: float) -> float | int:
    """A number as the reference's JSON writes it: whole values without a fraction (`1`, not
    `1.0`), others unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value
