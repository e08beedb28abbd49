"""Finding the JSON object in a judge's answer, where real models put it (issue 16, item 1).

Follows the reference system's reading of an answer: a ```json fence is unwrapped; an answer that
starts with `{` or `[` is read up to the end of its first value (trailing prose or a second object
is ignored); an answer that starts with prose is read from its last balanced `{...}` object (a
backslash escapes a brace there); a member whose value is NaN or Infinity is dropped; small slips
such as trailing commas are mended by the `json-repair` library, and only when it reports nothing
beyond such silent fixes and the answer holds no number JSON does not write (`07`, `.5`) and no
curly quote outside its strings. A leading byte-order mark is read past.

Unlike the reference, an answer cut off before its JSON ends (`finish_reason == "length"`, or an
object never closed) is never completed into a verdict: it is a failed attempt that says so.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..judge.errors import StructuredOutputError

__all__ = ["NeedsSearch", "parse_json_reply"]

_STRUCTURAL = re.compile(r'["\\{}\[\]]')
_BRACKETS = re.compile(r"[{}\[\]]")
_OPENING_FENCE = re.compile(r"^```json\b[^\n]*\n?")
_HARMONY_MESSAGE = "<|message|>"
_BOM = "\ufeff"
# json-repair is pure Python (a few microseconds per character, and far slower on deep nesting):
# it only mends answers of a judge's usual size, so a hostile answer cannot stall the event loop.
_REPAIR_MAX_CHARS = 8_192
_REPAIR_MAX_DEPTH = 32
# Searching prose for the JSON is a Python loop over brackets and quotes: bounded likewise.
_SEARCH_MAX_CHARS = 65_536


class NeedsSearch(Exception):
    """The answer is not plain JSON: finding the JSON in it is slower, pure-Python work."""


class _Dropped:
    """Stands for a NaN/Infinity member while parsing; such members are removed afterwards."""


_DROPPED = _Dropped()


def _without_dropped(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_dropped(item) for key, item in value.items() if not _is_dropped(item)}
    if isinstance(value, list):
        return [_without_dropped(item) for item in value if not _is_dropped(item)]
    return value


def _is_dropped(value: Any) -> bool:
    return value is _DROPPED or (type(value) is float and not math.isfinite(value))


def _loads(text: str) -> Any:
    """`text` as JSON, NaN/Infinity members removed (the walk runs only when there were some)."""
    dropped = False

    def constant(_name: str) -> _Dropped:
        nonlocal dropped
        dropped = True
        return _DROPPED

    def number(digits: str) -> float | _Dropped:
        nonlocal dropped
        value = float(digits)
        if math.isfinite(value):
            return value
        dropped = True
        return _DROPPED

    # strict=False accepts raw newlines and tabs inside strings, as the reference escapes them.
    try:
        value = json.loads(text, strict=False, parse_constant=constant, parse_float=number)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
    return _without_dropped(value) if dropped else value


def _end_of_first_value(text: str) -> int | None:
    """Index just past the value opening `text`, or None if it never closes (cut off)."""
    depth = 0
    in_string = False
    escaped_at = -2
    for match in _STRUCTURAL.finditer(text):
        char, at = match.group(), match.start()
        if in_string:
            if char == "\\" and escaped_at != at - 1:
                escaped_at = at
            elif char == '"' and escaped_at != at - 1:
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return at + 1
    return None


def _last_balanced_object(text: str) -> tuple[str | None, bool]:
    """The last balanced `{...}` in prose, and whether an object was left open after it.

    A backslash escapes the character after it anywhere, as in the reference: the braces of
    LaTeX-style prose after the JSON (`\\{x\\}`) are not an object.
    """
    depth = 0
    start = -1
    in_string = False
    escaped_at = -2
    last: str | None = None
    for match in _STRUCTURAL.finditer(text):
        char, at = match.group(), match.start()
        if escaped_at == at - 1:
            continue  # this character is escaped (a backslash never escapes the next one twice)
        if char == "\\":
            escaped_at = at
            continue
        if char == '"':
            in_string = not in_string
            continue
        if in_string:
            continue
        if char == "{":
            if depth == 0:
                start = at
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                last = text[start : at + 1]
    return last, depth > 0


def _nesting(text: str) -> int:
    depth = deepest = 0
    for char in _BRACKETS.findall(text):
        depth += 1 if char in "{[" else -1
        deepest = max(deepest, depth)
    return deepest


# What json-repair would read without saying so, yet JSON does not have: numbers JSON does not
# write (`07`, `.5`, `+0.5`, `5.`) and curly quotes as delimiters. Reading `07` as 7 would be a
# guess that changes a score, and curly quotes are ambiguous (one may be inside a value), so the
# attempt fails and the fallback call answers, as in the reference. Strings are skipped whole.
_NOT_JSON = re.compile(
    r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
    r"|(?P<number>(?<![\w.])[-+]?\.?\d[\w.+-]*)"
    r"|(?P<quote>[\u201c\u201d\u2018\u2019])",
    re.DOTALL,
)
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _has_non_json_token(candidate: str) -> bool:
    for match in _NOT_JSON.finditer(candidate):
        if match.group("quote"):
            return True
        number = match.group("number")
        if number and not _JSON_NUMBER.fullmatch(number):
            return True
    return False


def _repaired(candidate: str) -> Any:
    if len(candidate) > _REPAIR_MAX_CHARS or _nesting(candidate) > _REPAIR_MAX_DEPTH:
        return None
    if _has_non_json_token(candidate):
        return None
    from json_repair import loads as repair_loads

    try:
        repaired = repair_loads(candidate, logging=True)
    except Exception:  # the library's own failure is just "not JSON" here
        return None
    if not isinstance(repaired, tuple):
        return None
    value, log = repaired
    # The library's log lists its guesses (a missing quote, a literal where a string was
    # expected); only a repair it made without guessing (trailing commas, comments) is kept.
    if log or not isinstance(value, dict | list):
        return None
    return value


def _truncated(why: str) -> StructuredOutputError:
    return StructuredOutputError(
        f"the judge's answer was cut off ({why}) before its JSON ended; not repaired",
        code="STRUCTURED_OUTPUT_TRUNCATED",
        finish_reason="length" if "length" in why else None,
    )


def _not_json(detail: str) -> StructuredOutputError:
    return StructuredOutputError(
        f"the judge's answer is not valid JSON ({detail})",
        code="STRUCTURED_OUTPUT_JSON_PARSE_FAILED",
    )


def _body(text: str) -> str:
    if _HARMONY_MESSAGE in text:
        after = text.split(_HARMONY_MESSAGE, 1)[1]
        if after:
            text = after
    # A byte-order mark is an encoding marker, never content: read past it (the reference spends
    # the fallback call on it; no value can change by dropping it).
    body = text.strip().lstrip(_BOM).strip()
    if body.startswith("```json"):
        body = _OPENING_FENCE.sub("", body, count=1).strip()
    return body


def _candidate(body: str) -> str:
    if body.startswith(("{", "[")):
        end = _end_of_first_value(body)
        if end is None:
            raise _truncated("the JSON value is never closed")
        return body[:end]
    found, left_open = _last_balanced_object(body)
    if found is None:
        if left_open:
            raise _truncated("the JSON object is never closed")
        raise _not_json("no JSON object found")
    return found


def parse_json_reply(text: str, finish_reason: str | None, *, search: bool = True) -> Any:
    """The JSON answer in a judge reply, or `StructuredOutputError` saying why there is none.

    With `search=False`, an answer that is not plain JSON raises `NeedsSearch` instead of being
    searched, so a caller on an event loop can do that part on a worker thread.
    """
    if finish_reason == "length":
        # The model stopped early: even JSON that happens to parse may be missing members.
        raise _truncated("finish_reason=length")
    body = _body(text)
    try:
        value = _loads(body)  # the common case: the answer is exactly one JSON value
    except json.JSONDecodeError as exc:
        if not search:
            raise NeedsSearch from None
        if len(body) > _SEARCH_MAX_CHARS:
            raise _not_json(f"{exc.msg}; too long to search for a JSON value") from None
        candidate = _candidate(body)
        try:
            value = _loads(candidate)
        except json.JSONDecodeError as exc:
            value = _repaired(candidate)
            if value is None:
                raise _not_json(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
            value = _without_dropped(value)  # json-repair reads NaN as a float
    if _is_dropped(value):
        raise _not_json("NaN and Infinity are not JSON numbers")
    if value is None:
        raise StructuredOutputError(
            "the judge's answer is JSON null, not an object",
            code="STRUCTURED_OUTPUT_OBJECT_UNDEFINED",
        )
    return value
