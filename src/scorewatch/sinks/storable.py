"""What a stored value may be: every sink's form of JSON-like data, credentials left out.

Two rules, applied in one walk by `storable`:
- text no sink can hold as it is, NUL (PostgreSQL text and jsonb refuse it) and unpaired
  surrogates (not encodable as UTF-8, so neither SQLite, a file nor PostgreSQL takes them),
  becomes U+FFFD, and numbers JSON cannot write (NaN, Infinity) become the strings "NaN",
  "Infinity", "-Infinity";
- with `redact=True`, values under secret-looking keys are replaced, at any depth up to
  `_MAX_DEPTH`: agents often carry an `Authorization` header or an API key in their request
  context, and a score row has no use for it; so are the credentials of URLs in text values
  (`https://user:PASSWORD@host`, `?api_key=KEY`), `redact_url_credentials`;
- with `privacy` (a run's `privacy.Redaction`), personal data in every text, keys included, is
  replaced by the run's markers (`<EMAIL_1>`).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .memo import MEMO_LIMIT

if TYPE_CHECKING:
    from ..privacy import Redaction

__all__ = [
    "REDACTED",
    "REPLACEMENT",
    "is_secret_key",
    "json_encoder",
    "non_finite_path",
    "plain_storable_json",
    "redact_url_credentials",
    "redacts_any",
    "storable",
    "storable_columns",
    "storable_json",
    "storable_text",
    "stored_json",
    "unstorable_in",
]

_UNSTORABLE_TEXT: Final = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT: Final = "\ufffd"
REDACTED: Final = "[redacted]"
_NON_FINITE: Final = {math.inf: "Infinity", -math.inf: "-Infinity"}
_SECRET_WORD = re.compile(
    r"(^|_)(password|passwd|pass|pwd|passphrase|passcode|secret|token|key|api_?key|bearer|"
    r"authorization|auth|credentials?|cookie|jwt|private_?key|session_?id)($|_)"
)
# A URL's user information (`user:password@`, or a bare token before the `@`), and a query
# parameter (`?access_token=...`): what `redact_url_credentials` looks at.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@]*@")
_URL_PARAMETER = re.compile(r"([?&;])([^=&;#\s]+)=([^&;#\s]*)")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def json_encoder(
    *,
    ensure_ascii: bool = False,
    sort_keys: bool = False,
    separators: tuple[str, str] = (", ", ": "),
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = repr,
) -> Callable[[Any], str]:
    """What `json.dumps(value, ensure_ascii=..., sort_keys=..., separators=..., allow_nan=...,
    default=...)` writes, from one encoder made once: `json.dumps` makes a new encoder per call
    when given options, and `JSONEncoder.encode` its C encoder per call (about a microsecond of
    a row's seven JSON columns each, several of a request digest). The values are trees
    (JSON-like data a walk or a parser has just built), so the encoder keeps no record of the
    containers it is in (the check for a circular reference); without the C encoder (another
    interpreter), `JSONEncoder.encode`."""
    item_separator, key_separator = separators
    encoder = json.JSONEncoder(
        ensure_ascii=ensure_ascii,
        sort_keys=sort_keys,
        separators=separators,
        allow_nan=allow_nan,
        default=default,
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return encoder.encode
    text = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    chunks = make(
        None,
        encoder.default,
        text,
        None,
        key_separator,
        item_separator,
        sort_keys,
        False,  # skipkeys
        allow_nan,
    )

    def dumps(value: Any) -> str:
        if type(value) is str:
            return text(value)
        return "".join(chunks(value, 0))

    return dumps


# The JSON text of a stored value, as every sink writes it.
stored_json: Final[Callable[[Any], str]] = json_encoder()


# How `stored_json` writes a text (quoted and escaped, not in ASCII).
_text_json: Final = json.encoder.encode_basestring


def storable_json(value: Any) -> str:
    """`stored_json(storable(value))` of plain JSON data (dicts, lists, text, numbers, booleans
    and None, as `to_jsonable_python` gives them), without the walk when the text shows
    nothing it would change: a row's JSON columns almost never hold anything to clean."""
    if type(value) is str:
        # A text alone (most inputs and outputs): `storable` of it is `storable_text`, which
        # an ASCII text holding no NUL leaves as it is (`unstorable_in`), so it is written at
        # once, rather than written first and its text then searched four times.
        return _text_json(
            value if value.isascii() and "\x00" not in value else storable_text(value)
        )
    return _storable_text_of(stored_json(value), value)


# `stored_json` that refuses a value JSON does not write as it is (its `default` is the
# encoder's own, which raises), rather than writing its `repr`.
_strict_json: Final = json_encoder(default=None)


def plain_storable_json(value: Any) -> str | None:
    """`storable_json(value)` of a value vouched to be plain JSON (`AgentCall.plain_json`), or
    None when it holds what JSON does not write as it is (a date, a set, an object, a key of
    another kind, nesting too deep): then it is not what it was vouched to be, and its
    JSON-ready copy is to be written instead."""
    try:
        text = _strict_json(value)
    except (TypeError, ValueError, RecursionError):
        return None
    return _storable_text_of(text, value)


def _storable_text_of(text: str, value: Any) -> str:
    """`text` (`value` as JSON), or `value` walked and written again when the text shows
    something the walk changes: NaN or an infinity (written bare), a NUL (escaped), an unpaired
    surrogate (written as it is, so never in ASCII text). In text the words are false alarms,
    which only cost the walk."""
    if (
        "NaN" in text
        or "Infinity" in text
        or "\\u0000" in text
        or (not text.isascii() and _UNSTORABLE_TEXT.search(text) is not None)
    ):
        return stored_json(storable(value))
    return text


# Redaction looks this deep (mappings and lists count a level each); cleaning has no limit.
_MAX_DEPTH: Final = 16


@functools.lru_cache(maxsize=4096)  # rows repeat their keys; hostile ones only churn it
def is_secret_key(key: str) -> bool:
    """`apiKey`, `openai_key`, `X-API-Key`, `access_token`, `Authorization`, `bearer`, `pass`:
    yes. `author`, `tokens_used`, `keywords`, `passage`: no."""
    words = _CAMEL_BOUNDARY.sub("_", key).lower().replace("-", "_").replace(".", "_")
    return _SECRET_WORD.search(words) is not None


def redact_url_credentials(text: str) -> str:
    """`text` with the credentials of the URLs in it replaced by `REDACTED`: the user
    information (`https://[redacted]@host`) and the values of secret-looking query parameters
    (`?api_key=[redacted]`). Text without `@` or `=` is returned as it is, at once."""
    if "://" not in text:
        return text
    if "@" in text:
        text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    if "=" in text:
        text = _URL_PARAMETER.sub(_hide_parameter, text)
    return text


def _hide_parameter(found: re.Match[str]) -> str:
    if not is_secret_key(found.group(2)):
        return found.group(0)
    return f"{found.group(1)}{found.group(2)}={REDACTED}"


def unstorable_in(text: str) -> bool:
    """Whether `text` holds a NUL or an unpaired surrogate (what `storable_text` replaces).

    An ASCII text (a flag CPython keeps on every string: no scan) cannot hold a surrogate, so
    for it only a NUL is looked for, by `memchr`; the pattern's search walks the text in the
    regular-expression engine, about ten times the instructions per character, and a redacted
    row asks this of every text it stores."""
    if text.isascii():
        return "\x00" in text
    return _UNSTORABLE_TEXT.search(text) is not None


def storable_text(value: str) -> str:
    """`value` with NUL and unpaired surrogates replaced by U+FFFD."""
    if not unstorable_in(value):
        return value
    return _UNSTORABLE_TEXT.sub(REPLACEMENT, value)


def _number(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else _NON_FINITE[value]


def storable(
    value: Any, *, redact: bool = False, privacy: Redaction | None = None, prepared: bool = False
) -> Any:
    """`value` (JSON-like data, as `ScoreRecord.to_row()` builds it) in a form every sink
    stores (keys cleaned too); with `redact`, secret-looking keys' values are `REDACTED`; with
    `privacy`, personal data in its texts is replaced by the run's markers. `prepared`: the
    caller's `redacts_any` of `value` (among others) said something is to be replaced, so its
    texts are not collected and looked up again."""
    if privacy is None:
        return _walk(value, redact, 0, None)
    # The value's texts (keys too) are scanned together, in one pass; the walk that cleans the
    # value replaces what they hold only when one of them holds something.
    changed = prepared or redacts_any(privacy, [value])
    return _walk(value, redact, 0, privacy.text if changed else None)


def storable_columns(columns: Mapping[str, Any], privacy: Redaction) -> dict[str, Any]:
    """A row's content `columns` (name -> value, whose texts `redacts_any` has scanned), each
    value storable with its personal data replaced. The names are the row's own, not content:
    kept as they are (a custom pattern matching part of `input` leaves the column `input`)."""
    scrub = privacy.text
    cleaned: dict[str, Any] = {}
    for name, value in columns.items():
        kind = type(value)
        if kind is str:  # most columns: text, cleaned here rather than by a call
            value = scrub(value)
            cleaned[name] = storable_text(value) if unstorable_in(value) else value
        elif kind in _AS_IS:  # an empty column (None): not a call through the ABCs
            cleaned[name] = value
        else:
            cleaned[name] = _walk(value, False, 1, scrub)
    return cleaned


def redacts_any(privacy: Redaction, values: Sequence[Any]) -> bool:
    """Whether the run's redactor replaces anything in `values` (JSON-like data): their texts,
    keys included, scanned together in one pass, after which `privacy.text` of each is a
    look-up."""
    texts: list[str] = []
    for value in values:
        if value is not None:
            _texts(value, texts)
    return privacy.prepare(dict.fromkeys(texts))


def _texts(value: Any, into: list[str]) -> None:
    """Every text in `value`, keys included, appended to `into` (what `_walk` scrubs)."""
    if isinstance(value, str):
        into.append(value)
    # A list is told from a mapping by its type: `isinstance(value, Mapping)` asks the ABC
    # machinery (a Python call) for every list.
    elif type(value) is dict or (type(value) not in _SEQUENCES and isinstance(value, Mapping)):
        for key, item in value.items():
            if isinstance(key, str):
                into.append(key)
            if type(item) is str:
                into.append(item)
            elif type(item) not in _NO_TEXT:
                _texts(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            if type(item) is str:
                into.append(item)
            elif type(item) not in _NO_TEXT:
                _texts(item, into)


# Leaves that are stored as they are; text is cleaned in place; anything else goes to `_walk`.
_AS_IS: Final = frozenset({int, bool, type(None)})
_NO_TEXT: Final = _AS_IS | {float}
_SEQUENCES: Final = frozenset({list, tuple})


# Keys already seen storable as they are: rows repeat the same few dozen keys, and a set look-up
# costs less than a search per key. Bounded as the sinks' memos are (`memo.MEMO_LIMIT`), so
# hostile keys only stop being remembered. A set, not a `BoundedMemo`: every key of every
# walked row is looked up here, and the set costs 17k fewer instructions per 2 kB row.
_STORABLE_KEYS: Final[set[str]] = set()


def _storable_key(key: str) -> str:
    if unstorable_in(key):
        return _UNSTORABLE_TEXT.sub(REPLACEMENT, key)
    if len(_STORABLE_KEYS) < MEMO_LIMIT:
        _STORABLE_KEYS.add(key)
    return key


def _walk(value: Any, redact: bool, depth: int, scrub: Callable[[str], str] | None) -> Any:
    # The common leaves (text, integers, None, numbers) are handled in the loops, so a row costs
    # about one call per container rather than one per value. A plain dict is told by its type
    # first: `isinstance(value, Mapping)` asks the ABC machinery, several times the cost.
    if type(value) is dict:
        return _walk_mapping(value, redact, depth, scrub)
    if isinstance(value, str):
        text = storable_text(value if scrub is None else scrub(value))
        return redact_url_credentials(text) if redact and depth <= _MAX_DEPTH else text
    if isinstance(value, float):
        return value if math.isfinite(value) else _number(value)
    if isinstance(value, Mapping):
        return _walk_mapping(value, redact, depth, scrub)
    if isinstance(value, list | tuple):
        if scrub is not None:
            # Text in a list (a judge's claims) scrubbed here, as `_walk` would: not a call
            # of it, `storable_text` and `unstorable_in` per item. ASCII text holding no NUL is
            # storable as it is (`unstorable_in`).
            return [
                item
                if (kind := type(item)) in _AS_IS
                else (
                    text
                    if (text := scrub(item)).isascii() and "\x00" not in text
                    else storable_text(text)
                )
                if kind is str and not redact
                else _walk(item, redact, depth + 1, scrub)
                for item in value
            ]
        return [
            item
            if (kind := type(item)) in _AS_IS
            or (kind is str and not redact and not unstorable_in(item))
            else _walk(item, redact, depth + 1, None)
            for item in value
        ]
    return value


def _walk_mapping(
    value: Mapping[Any, Any], redact: bool, depth: int, scrub: Callable[[str], str] | None
) -> dict[Any, Any]:
    hide = redact and depth <= _MAX_DEPTH
    cleaned: dict[Any, Any] = {}
    for key, item in value.items():
        if isinstance(key, str):
            if hide and is_secret_key(key):
                item = REDACTED
            if scrub is not None:
                key = scrub(key)
            if key not in _STORABLE_KEYS:
                key = _storable_key(key)
        kind = type(item)
        if kind is str:
            if scrub is not None:
                item = scrub(item)
            if unstorable_in(item):
                item = _UNSTORABLE_TEXT.sub(REPLACEMENT, item)
            if hide:
                item = redact_url_credentials(item)
        elif kind is float:
            if not math.isfinite(item):
                item = _number(item)
        elif kind not in _AS_IS:
            item = _walk(item, redact, depth + 1, scrub)
        cleaned[key] = item
    return cleaned


def non_finite_path(value: Any) -> list[str | int] | None:
    """Where in `value` (JSON-like data) the first NaN or infinite number is, as keys and
    indexes (`[]` for `value` itself); None when there is none. Walks without recursion, so
    any nesting depth is fine."""
    if not _has_non_finite(value):  # the common case, without building any path
        return None
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return [_key_text(part) if isinstance(part, str) else part for part in path]
        elif isinstance(item, Mapping):
            stack.extend((child, (*path, str(key))) for key, child in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((child, (*path, index)) for index, child in enumerate(item))
    return None


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if item - item != 0.0:  # inf - inf and nan - nan are nan
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _key_text(key: str) -> str:
    # A key named in an error answer: bounded, and printable whatever it held.
    return storable_text(key[:40] + ("..." if len(key) > 40 else ""))
