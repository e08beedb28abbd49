"""Lower-casing in the model-free scorers against the reference runtime's (issue 30, item 14).

tests/fixtures/reference/model_free/case_mapping.json holds every code point the reference
runtime's `toLowerCase` changes, with its lower case (tools/reference/record_case_mapping.mjs).
`js_lower` (Python's `str.lower`, the same full Unicode mapping) agrees on every one but the
capital letters Unicode added after the version of Python's tables (14.0 on Python 3.11): those
it leaves as they are. That is a documented difference (docs/concepts.md), not a wrong mapping.
"""

from __future__ import annotations

import unicodedata

import pytest

from reference_fixtures import load_reference
from scorewatch.scorers._text import js_lower

pytestmark = pytest.mark.unit

RECORDED = load_reference("model_free/case_mapping.json")


def _disagreements() -> list[int]:
    return [code for code, lower in RECORDED["changed"] if js_lower(chr(code)) != lower]


def test_lower_casing_agrees_except_for_letters_newer_than_pythons_tables() -> None:
    newer = _disagreements()
    assert len(RECORDED["changed"]) > 1_400
    # Every disagreement is a letter Python's Unicode tables do not know yet.
    assert all(unicodedata.category(chr(code)) == "Cn" for code in newer), [
        hex(code) for code in newer
    ]
    if unicodedata.unidata_version == "14.0.0":
        assert len(newer) == 55  # the count docs/concepts.md gives for Python 3.11


def test_python_lower_cases_nothing_the_reference_keeps() -> None:
    changed = {code for code, _ in RECORDED["changed"]}
    extra = [
        code
        for code in range(0x110000)
        if not 0xD800 <= code <= 0xDFFF and code not in changed and js_lower(chr(code)) != chr(code)
    ]
    assert extra == []


@pytest.mark.parametrize(
    ("text", "lower"),
    [("ΟΔΟΣ", "οδος"), ("İstanbul", "i̇stanbul"), ("STRASSE ẞ", "strasse ß"), ("ǅ", "ǆ")],
)
def test_full_mappings_match_the_reference(text: str, lower: str) -> None:
    # Final sigma, dotted capital I, capital sharp s, titlecase digraphs: the same as there.
    recorded = dict(RECORDED["changed"])
    assert js_lower(text) == lower
    for char in text:
        if ord(char) in recorded and char not in "Σ":
            assert js_lower(char) == recorded[ord(char)]
