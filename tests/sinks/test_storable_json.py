"""The stored JSON text and the storable walk on the values a row holds: the same text as
`json.dumps(value, ensure_ascii=False, default=repr)`, and every rule of `storable` kept on
plain dicts, other mappings and numbers at any depth."""

from __future__ import annotations

import json
import math
import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorewatch.sinks.storable import (
    _UNSTORABLE_TEXT,
    REDACTED,
    REPLACEMENT,
    storable,
    storable_text,
    stored_json,
    unstorable_in,
)

pytestmark = pytest.mark.unit


class _Opaque:
    def __repr__(self) -> str:
        return "<opaque é>"


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        'quotes " and \\ and\nnew lines, é, 雪, \U0001f600',
        "",
        0,
        -3,
        10**40,
        2.5,
        -0.0,
        float("nan"),
        float("inf"),
        -float("inf"),
        None,
        True,
        False,
        [],
        {},
        [1, "two", 3.0, None, [True, {"k": "v"}]],
        ("a", 1),
        {"a": {"b": {"c": [1, 2, {"d": None}]}}, "e": "é"},
        {1: "int key", 2.5: "float key", None: "none key", False: "bool key"},
        _Opaque(),
        {"inner": _Opaque(), "list": [_Opaque()]},
    ],
)
def test_stored_json_writes_what_json_dumps_writes(value: Any) -> None:
    assert stored_json(value) == json.dumps(value, ensure_ascii=False, default=repr)


def test_stored_json_is_one_encoder_for_many_values() -> None:
    # The encoder is shared by every row and thread: one value never leaves state for the next.
    values = [{"a": [1, {"b": "c"}]}, "x", [None], {"a": [1, {"b": "c"}]}]
    texts = [stored_json(value) for value in values]
    assert texts[0] == texts[3] == '{"a": [1, {"b": "c"}]}'
    assert texts[1:3] == ['"x"', "[null]"]


def test_storable_cleans_numbers_and_text_in_dicts_and_other_mappings() -> None:
    proxy = types.MappingProxyType({"x\x00": math.nan, "ok": "a\x00b"})
    value = {
        "score": math.inf,
        "nested": {"low": -math.inf, "fine": 0.5, "list": [math.nan, "c\x00"]},
        "proxy": proxy,
    }
    assert storable(value) == {
        "score": "Infinity",
        "nested": {"low": "-Infinity", "fine": 0.5, "list": ["NaN", f"c{REPLACEMENT}"]},
        "proxy": {f"x{REPLACEMENT}": "NaN", "ok": f"a{REPLACEMENT}b"},
    }


def test_storable_redacts_secret_keys_in_dicts_and_other_mappings() -> None:
    value = {
        "apiKey": "sk-123",
        "headers": types.MappingProxyType({"Authorization": "Bearer x", "accept": "json"}),
        "deep": {"items": [{"password": 1.5}]},
    }
    assert storable(value, redact=True) == {
        "apiKey": REDACTED,
        "headers": {"Authorization": REDACTED, "accept": "json"},
        "deep": {"items": [{"password": REDACTED}]},
    }


# Texts that hold what storing replaces (NUL, lone surrogates at either end of their block)
# among ASCII, Latin-1, BMP and astral characters.
_ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "a", "\x7f", "é"]),
        st.characters(),
    ),
    max_size=40,
)


@given(_ANY_TEXT)
def test_unstorable_in_agrees_with_the_pattern(text: str) -> None:
    assert unstorable_in(text) is (_UNSTORABLE_TEXT.search(text) is not None)
    assert (storable_text(text) == text) is not unstorable_in(text)


def test_unstorable_in_sees_a_nul_in_ascii_and_a_surrogate_in_wide_text() -> None:
    assert unstorable_in("plain\x00text")
    assert not unstorable_in("plain text")
    assert unstorable_in("wide 😀 \udc00")
    assert not unstorable_in("wide 😀 é")
