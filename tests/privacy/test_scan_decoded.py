"""Values written percent-encoded (`ada%40example.com` in a URL's query, `mailto:`) or as
code-point escapes of figures (`\\uff14...`, full-width digits in `ensure_ascii` JSON) are read
as they decode, and replaced where they are written with their plain form's marker (issue 34)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import scorewatch as sw
from scorewatch.core.call import AgentCall
from scorewatch.privacy import PrivacyPolicy
from scorewatch.privacy.decoded import _CODE_POINT, _CODED, Decoded, _matches, may_decode
from scorewatch.privacy.policy import Redaction
from scorewatch.privacy.scanner import Found, Scanner
from scorewatch.sinks import SqliteSink
from scorewatch.sinks.record import ScoreRecord

pytestmark = pytest.mark.unit

POLICY = PrivacyPolicy(redact=["all"], patterns={"EMPLOYEE": r"EMP-\d{6}"})
_PYTHON = Scanner(POLICY.redact, POLICY.patterns, POLICY.phone_region, compiled=False)


class _Undecoded(Scanner):
    """The scanner before this change (the oracle): `find` without reading the decoded text."""

    def _decoded_in(self, found: Found, texts: Any, joined: str) -> None:
        return None


_OLD = _Undecoded(POLICY.redact, POLICY.patterns, POLICY.phone_region)


def _redacted(text: str, *, compiled: bool = True) -> str:
    return (POLICY.start() if compiled else Redaction(_PYTHON)).text(text)


_FULL_WIDTH = str.maketrans("0123456789-()+", "０１２３４５６７８９－（）＋")


def _escaped_figures(value: str) -> str:
    """`value` with full-width figures, as `json.dumps` (`ensure_ascii`) writes it."""
    return json.dumps(value.translate(_FULL_WIDTH))[1:-1]


_VALUES = [
    ("ada.lovelace@example.com", "EMAIL"),
    ("+1 415 555 0132", "PHONE"),
    ("(415) 555-0132", "PHONE"),
    ("4111 1111 1111 1111", "CARD"),
    ("203.0.113.42", "IP"),
    ("EMP-482913", "EMPLOYEE"),
]


@pytest.mark.parametrize("compiled", [True, False], ids=["hyperscan", "re"])
@pytest.mark.parametrize(("value", "label"), _VALUES, ids=[label for _, label in _VALUES])
def test_a_value_written_encoded_gets_its_plain_forms_marker(
    value: str, label: str, compiled: bool
) -> None:
    run = POLICY.start() if compiled else Redaction(_PYTHON)
    assert run.text(f"plain: {value}.") == f"plain: <{label}_1>."
    for written in (
        f"https://example.com/?q=1&v={quote(value, safe='')}&x=2",
        f"mailto:{quote(value)}",
        f'{{"v": "{_escaped_figures(value)}"}}',
    ):
        if written.endswith(f"{value}"):
            continue  # nothing encoded (`quote` keeps an address's `@`)
        if "\\u" in written and value.translate(_FULL_WIDTH) == run.text(
            value.translate(_FULL_WIDTH)
        ):
            continue  # not a value in full-width figures either (a custom pattern's `-`)
        redacted = run.text(written)
        assert f"<{label}_1>" in redacted and f"<{label}_2>" not in redacted, (written, redacted)


def test_the_examples_of_the_docs() -> None:
    run = POLICY.start()
    assert run.text("https://x.io/?to=ada%40example.com&q=1") == "https://x.io/?to=<EMAIL_1>&q=1"
    assert run.text("mailto:ada%40example.com") == "mailto:<EMAIL_1>"
    assert run.text("tel:%2B1%20415%20555%200132") == "tel:<PHONE_1>"
    assert run.text("\\uff14\\uff11\\uff15-555-0132") == "<PHONE_1>"
    assert run.text("ada\\u0040example.com") == "<EMAIL_1>"
    # A `%` before figures that is not an encoded value: the figures as written still count.
    assert run.text("100%4111 1111 1111 1111") == "100%<CARD_1>"
    # Ordinary texts: the same as ever.
    assert run.text("50% off, 100%") == "50% off, 100%"


def test_the_decoded_text_and_where_its_characters_are_written() -> None:
    decoded = Decoded.of("a%C3%A9b\\u00e9c%zz\\n%e2%82")
    assert decoded.text == "aébéc%zz\n\ufffd"
    spans = [(decoded.start(i), decoded.end(i + 1)) for i in range(len(decoded.text))]
    assert spans == [
        *[(0, 1), (1, 7), (7, 8), (8, 14), (14, 15), (15, 16), (16, 17), (17, 18)],
        *[(18, 20), (20, 26)],
    ]
    assert [decoded.position(at) for at in (0, 7, 14, 15)] == [0, 2, 4, 5]


_URL_TEXT = st.text(
    alphabet=st.sampled_from([*"%%%%0123456789abcdefACEF @x.-", "é", "€", "\n"]), max_size=40
)


@settings(max_examples=500, deadline=None)
@given(text=_URL_TEXT)
def test_percent_runs_decode_as_unquote_does(text: str) -> None:
    decoded = Decoded.of(text)
    assert decoded.text == unquote(text)
    _spans_are_ordered(decoded, text)


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=40).filter(lambda t: "%" not in t), ascii_only=st.booleans())
def test_json_escapes_decode_as_json_does(text: str, ascii_only: bool) -> None:
    written = json.dumps(text, ensure_ascii=ascii_only)
    decoded = Decoded.of(written[1:-1])
    assert decoded.text == json.loads(written)
    _spans_are_ordered(decoded, written[1:-1])


def _spans_are_ordered(decoded: Decoded, original: str) -> None:
    """Each decoded character's span lies in the original, after the one before's; a character
    written as itself is that character."""
    done = 0
    for i, character in enumerate(decoded.text):
        start, end = decoded.start(i), decoded.end(i + 1)
        assert done <= start < end <= len(original)
        if end - start == 1:
            assert original[start] == character
            assert decoded.position(start) == i
        done = end


# Random texts holding seeded values, encoded or not, among words, figures and URL pieces.
_PLAIN = [value for value, _ in _VALUES] + ["x@y.co", "sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy"]
_GLUE = [" ", "\n", "?q=", "&", "=", "%", "%2", "%20", "%40", "50%", "é", "\\", "\\n", "a", "12"]
_piece = st.one_of(st.sampled_from(_PLAIN), st.sampled_from(_GLUE))


@st.composite
def _encoded_in_text(draw: st.DrawFn) -> tuple[str, str, str]:
    value = draw(st.sampled_from(_PLAIN))
    way = draw(st.sampled_from(["quote", "quote-all", "escaped"]))
    if way == "escaped":
        written = _escaped_figures(value)
    else:
        written = quote(value, safe="@" if way == "quote" else "")
    before = "".join(draw(st.lists(_piece, max_size=5)))
    after = "".join(draw(st.lists(_piece, max_size=5)))
    return before, written, after


@pytest.mark.parametrize("compiled", [True, False], ids=["hyperscan", "re"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_encoded_in_text())
def test_a_value_written_encoded_anywhere_is_not_kept(
    compiled: bool, case: tuple[str, str, str]
) -> None:
    """Where the value read decoded is redacted in the decoded text, its written form is not
    kept in the text as written (glued to what comes before or after it, a value may not be
    one, decoded or not: the decoded text decides)."""
    before, written, after = case
    text = before + written + after
    decoded = Decoded.of(text).text
    value = unquote(written) if "%" in written else json.loads(f'"{written}"')
    if value == written or decoded.count(value) != 1 or "\\" in decoded:
        return  # (a backslash left decoded would be read as an escape again: decode once)
    if decoded != Decoded.of(before).text + value + Decoded.of(after).text:
        return  # what it is written next to decodes with it (`%` before `4111%20...`: `A11 ...`)
    if value in _redacted(decoded, compiled=compiled):
        return  # not a value where it stands (`a4111 ...`: an identifier)
    redacted = _redacted(text, compiled=compiled)
    assert written not in redacted, (text, redacted)


_ANY = st.lists(st.one_of(_piece, st.text(max_size=6)), max_size=10).map("".join)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_ANY, min_size=1, max_size=4))
def test_texts_that_decode_as_they_read_are_scanned_as_before(texts: list[str]) -> None:
    """Differential against the scanner without the decoded reading: every text holding no
    percent-encoded character nor code-point escape of a figure or an ASCII character (every
    ordinary text) gives the same candidates, and the same redacted texts."""
    joined = "\n".join(texts)
    assume(not may_decode(joined, "\\" in joined))
    scanner = POLICY._scanner
    assert scanner.find(texts) == _OLD.find(texts)
    assert scanner.scan(texts) == _OLD.scan(texts)


def _scored(text: str, redaction: Redaction) -> ScoreRecord:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1.0)
    call = AgentCall(
        input=text,
        output="sent to ada@example.com",
        target="bot",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        run_id="run-1",
        metadata={"args": json.dumps({"card": "４１１１ １１１１ １１１１ １１１１"})},
    )
    return ScoreRecord.failure(
        "row-1", scorer, call, ValueError("judge quoted ada%40example.com"), redaction=redaction
    )


def test_a_stored_row_keeps_no_encoded_value(tmp_path: Path) -> None:
    text = "open https://x.io/unsubscribe?to=ada%40example.com or call %2B1%20415%20555%200132"
    record = _scored(text, POLICY.start())
    row = record.to_row()
    assert row["input"] == "open https://x.io/unsubscribe?to=<EMAIL_1> or call <PHONE_1>"
    assert row["output"] == "sent to <EMAIL_1>"
    assert row["error"] == "judge quoted <EMAIL_1>"
    assert "<CARD_1>" in row["metadata"]["args"]
    sink = SqliteSink(tmp_path / "scores.db")
    asyncio.run(sink.write([record]))
    sink.close()
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("scores.db*"))
    for kept in (b"ada%40example", b"555%200132", b"\\uff14\\uff11", b"ada@example"):
        assert kept not in stored


_CODED_TEXT = st.lists(
    st.sampled_from(["%", "%2", "%41", "%C3%A9", "\\", "\\u0040", "\\uff14", "\\n", "a", "4", " "]),
    max_size=12,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=_CODED_TEXT)
def test_escapes_are_matched_where_finditer_matches_them(text: str) -> None:
    """`_matches` (a match tried only where `str.find` finds its first character) finds what
    the engine's own `finditer` does (the oracle)."""
    assert [m.span() for m in _matches(_CODED, text, "%\\")] == [
        m.span() for m in _CODED.finditer(text)
    ]
    assert [m.span() for m in _matches(_CODE_POINT, text, "\\")] == [
        m.span() for m in _CODE_POINT.finditer(text)
    ]
