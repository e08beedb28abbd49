"""Runs of figures: the work per run is bounded, and what is found on realistic runs is what the
walk before the bound found, and more (issue 34).

- Phone numbers: a run tries at most `Scanner.PHONE_TRIES` candidates that are not one (a parse
  costs ~30-50 us); a run with fewer finds what the unbounded walk finds, which is every value
  the walk before this change found (kept below as the oracle), and phone numbers after an
  unrelated group of digits (`1234 415 555 0132`).
- IPv6: hints close together are searched as one; the search per hint (kept below as the
  oracle) finds the same.
- Digits of other scripts and full-width separators read as ASCII ones.

The work is counted, not timed: parses of phone numbers, Luhn checks."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from stdnum import luhn

from scorewatch.privacy import PrivacyPolicy
from scorewatch.privacy.policy import Redaction
from scorewatch.privacy.scanner import _START, Found, Scanner, _known, figured

pytestmark = pytest.mark.unit

POLICY = PrivacyPolicy(redact=["all"])


class _Unbounded(Scanner):
    """The walk without its bound: every candidate a run holds is tried."""

    __slots__ = ()
    PHONE_TRIES = 10**9


class _Before(Scanner):
    """The walk as it was before the bound (the oracle): `_run_values` and `_walk` as they
    were, phone numbers looked for past a candidate that is not one, with no bound."""

    __slots__ = ()

    def _run_values(self, text: str, start: int, end: int) -> list[tuple[int, int, int, str, str]]:
        kinds = self._numeric
        chunk = text[start:end]
        digits = sum(map(chunk.count, "0123456789"))
        values: Found = []
        if "card" in kinds and digits >= 13:
            self._old_walk(values, "card", text, start, end)
        if "ip" in kinds and digits >= 4 and chunk.count(".") >= 3:
            self._old_walk(values, "ip", text, start, end)
        if "phone" in kinds and digits >= 7:
            at = start
            for _, s, e, _, _ in sorted(values, key=_START):
                if s > at:
                    self._old_walk(values, "phone", text, at, s)
                at = max(at, e)
            if at < end:
                self._old_walk(values, "phone", text, at, end)
        return [(p, s - start, e - start, label, normal) for p, s, e, label, normal in values]

    def _old_walk(self, found: Found, kind: str, text: str, start: int, end: int) -> None:
        compiled, recogniser = self._builtin[kind]
        validate, cache = recogniser.validate, self._validated[kind]
        priority = {"card": 3, "ip": 4, "phone": 5}[kind]
        at = start
        while at < end:
            m = compiled.search(text, at, end)
            if m is None:
                return
            begin = m.start()
            confirmed = _known(validate, text[begin : m.end()], cache)
            if confirmed is None:
                at = m.end() if kind == "phone" else m.start() + 1
                continue
            matched, normal = confirmed
            found.append((priority, begin, begin + len(matched), recogniser.label, normal))
            at = begin + len(matched)


class _PerHint(Scanner):
    """The IPv6 search before hints were grouped (the oracle): one search per hint."""

    __slots__ = ()

    def _ipv6_near(self, found: Found, text: str, hints: list[int]) -> None:
        pattern = self._ipv6
        assert pattern is not None
        candidates = []
        done = 0
        size = len(text)
        for hint in hints:
            while (low := max(done, hint - 40)) <= hint:
                m = pattern.search(text, low, min(size, hint + 42))
                if m is None or m.start() > hint + 1:
                    break
                candidates.append(m)
                done = m.end()
        if candidates:
            self._confirmed(found, "ip", text, candidates)


_SCANNERS: dict[tuple[type[Scanner], bool], Scanner] = {}


def _scanner(kind: type[Scanner], compiled: bool = True) -> Scanner:
    """One scanner of each kind for the module (what a scanner's caches hold changes no
    outcome: tests/privacy/test_scan_exact.py)."""
    key = (kind, compiled)
    if key not in _SCANNERS:
        _SCANNERS[key] = kind(
            POLICY.redact, POLICY.patterns, POLICY.phone_region, compiled=compiled
        )
    return _SCANNERS[key]


# --- runs of figures: values, unrelated groups, separators ------------------------------------

_PHONES = [
    "+1 201-555-0123",
    "(201) 555-0123",
    "201-555-0123",
    "201.555.0123",
    "415 555 0132",
    "+44 20 7946 0958",
    "+33 6 12 34 56 78",
    "+49 1512 3456789",
    "+81 90-1234-5678",
    "+61 412 345 678",
]


@st.composite
def _card(draw: st.DrawFn) -> str:
    body = draw(st.sampled_from("3456")) + draw(st.text("0123456789", min_size=14, max_size=14))
    digits = body + luhn.calc_check_digit(body)
    return draw(st.sampled_from([" ", "-", ""])).join(digits[i : i + 4] for i in range(0, 16, 4))


_group = st.text("0123456789", min_size=1, max_size=5)
_figure = st.one_of(
    _group, _group, _group, st.sampled_from(_PHONES), _card(), st.ip_addresses(v=4).map(str)
)
_between = st.sampled_from([" ", " ", "-", ".", "/", " (", ") ", "+", ":", "  ", " - "])


@st.composite
def _run(draw: st.DrawFn) -> str:
    """A run of figures of at most 5 pieces (values and unrelated groups of digits)."""
    pieces = draw(st.lists(_figure, min_size=1, max_size=5))
    out = pieces[0]
    for piece in pieces[1:]:
        out += draw(_between) + piece
    return out


# Runs apart: a letter, a line break, a comma, words.
_texts = st.lists(
    st.tuples(_run(), st.sampled_from([" x ", "\n", ", ", " call ", "é"])), min_size=1, max_size=4
).map(lambda runs: "".join(run + gap for run, gap in runs))


def _bounded(text: str) -> bool:
    """Whether every run of `text` holds fewer places a candidate may start (a group of
    digits, a `+`, a `(`) than a run may try: each try that fails starts at one of them."""
    return all(
        len(re.findall(r"\d+", run)) + run.count("+") + run.count("(") < Scanner.PHONE_TRIES
        for run in re.findall(r"[0-9 \t().+:/-]+", text)
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts)
@example(text="1234 415 555 0132 x ")
@example(text="1234 5678 (415) 555-0132, ")
@example(text="12 +44 20 7946 0958 99 201-555-0123\n")
def test_a_bounded_run_finds_what_the_unbounded_and_the_former_walk_find(text: str) -> None:
    assume(_bounded(text))
    found = _scanner(Scanner).scan([text])
    assert found == _scanner(_Unbounded).scan([text])
    assert found == _scanner(Scanner, compiled=False).scan([text])
    before = _scanner(_Before).scan([text])
    assert set(before) <= set(found), (text, sorted(set(before) - set(found)))


@pytest.mark.parametrize(
    ("text", "phone"),
    [
        ("1234 415 555 0132", "415 555 0132"),
        ("ref 1234 415 555 0132.", "415 555 0132"),
        ("12 34 415 555 0132", "415 555 0132"),
        ("1999 (201) 555-0123", "(201) 555-0123"),
        ("7 7 201.555.0123", "201.555.0123"),
        ("no. 99 201-555-0123", "201-555-0123"),
    ],
)
def test_a_phone_number_after_an_unrelated_group_is_found(text: str, phone: str) -> None:
    """The candidate from the first group is not a phone number, nor any cut of it; the one
    from a later group is. (The former walk looked for the next candidate past it.)"""
    found = [text[s:e] for s, e, label, _ in _scanner(Scanner).matches(text) if label == "PHONE"]
    assert phone in found, found
    assert phone not in [
        text[s:e] for s, e, label, _ in _scanner(_Before).matches(text) if label == "PHONE"
    ]


# --- the work per run ---------------------------------------------------------------------


@contextmanager
def _counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """How many times `phonenumbers.parse` and `luhn.is_valid` run (the real ones)."""
    import phonenumbers
    from stdnum import luhn as stdnum_luhn

    counts = {"parse": 0, "luhn": 0}
    parse, is_valid = phonenumbers.parse, stdnum_luhn.is_valid

    def counted_parse(*args: Any, **kwargs: Any) -> Any:
        counts["parse"] += 1
        return parse(*args, **kwargs)

    def counted_luhn(*args: Any, **kwargs: Any) -> Any:
        counts["luhn"] += 1
        return is_valid(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(phonenumbers, "parse", counted_parse)
        patch.setattr(stdnum_luhn, "is_valid", counted_luhn)
        yield counts


def _groups(size: int, seed: int) -> str:
    draw = random.Random(seed)
    return " ".join(f"{draw.randrange(10_000):04d}" for _ in range(size // 5 + 1))[:size]


def _grouped(size: int, seed: int) -> str:
    draw = random.Random(seed)
    out: list[str] = []
    while len(out) < size:
        out.append(str(draw.randrange(10)))
        if draw.randrange(4) == 0:
            out.append(draw.choice(" -"))
    return "".join(out)[:size]


def _work(text: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    scanner = Scanner(POLICY.redact, POLICY.patterns, POLICY.phone_region)  # nothing cached
    with _counted(monkeypatch) as counts:
        scanner.scan([text])
    return counts


@pytest.mark.parametrize("shape", [_groups, _grouped], ids=["groups", "grouped"])
def test_a_long_run_of_figures_parses_as_many_phone_numbers_as_a_short_one(
    shape: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One run of 2, 20 and 40 kB: the parses stop at the run's bound (each candidate that is
    not one cut back a few times, `_cut_until_valid`); the Luhn checks (one candidate at each
    group, a few cuts each) grow with the text, no faster."""
    works = [_work(shape(size, 1), monkeypatch) for size in (2_000, 20_000, 40_000)]
    bound = (Scanner.PHONE_TRIES + 10) * 5  # the tries that fail, and numbers found, cut back
    assert all(0 < work["parse"] <= bound for work in works), works
    assert works[2]["parse"] <= works[1]["parse"] + 50, works
    assert works[2]["luhn"] <= 2.2 * works[1]["luhn"], works
    assert works[1]["luhn"] <= 5 * 20_000 / 2, works


def test_short_runs_cost_in_proportion_to_their_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of five groups, each ended by a letter: every run is read whole, so the parses
    grow with the number of runs (each bounded), linearly."""

    def runs(count: int) -> str:
        draw = random.Random(count)
        return "".join(
            " ".join(f"{draw.randrange(10_000):04d}" for _ in range(5)) + " x "
            for _ in range(count)
        )

    small, large = _work(runs(100), monkeypatch), _work(runs(400), monkeypatch)
    assert large["parse"] <= 4.4 * small["parse"], (small, large)
    assert small["parse"] <= 100 * 5 * 5, small


# --- IPv6: hints searched together --------------------------------------------------------

_hexish = st.text(st.sampled_from("0123456789abcdefABCDEF:.: x\n"), max_size=120)


@settings(max_examples=500, deadline=None)
@given(
    texts=st.lists(
        st.one_of(_hexish, st.sampled_from(["2001:db8::1", "fe80::1:2:3:4", "1:" * 30, "::"])),
        min_size=1,
        max_size=6,
    ).map("".join)
)
@example(texts="1:" * 60 + " 2001:db8::1")
@example(texts="::" + "a" * 45 + ":1:2001:db8::1")
def test_hints_searched_together_find_what_a_search_per_hint_finds(texts: str) -> None:
    for compiled in (True, False):
        assert _scanner(Scanner, compiled).scan([texts]) == _scanner(_PerHint, compiled).scan(
            [texts]
        )


# --- digits of other scripts ------------------------------------------------------------

_FULL_WIDTH = str.maketrans(
    {**{str(d): chr(0xFF10 + d) for d in range(10)}, "-": "－", "(": "（", ")": "）", "+": "＋"}
)
_ARABIC_INDIC = str.maketrans({str(d): chr(0x0660 + d) for d in range(10)})


def test_figured_keeps_the_length_and_reads_other_digits_as_ascii() -> None:
    written = "４１５-５５５-０１３２ ٤١٥ （２０１） ５５５－０１２３ ＋４４ x"
    assert figured(written) == "415-555-0132 415 (201) 555-0123 +44 x"
    assert len(figured(written)) == len(written)
    for text in ("plain ascii 4111", "é ü 日本"):
        assert figured(text) is text


_VALUES = [
    ("PHONE", "415-555-0132"),
    ("PHONE", "(201) 555-0123"),
    ("PHONE", "+44 20 7946 0958"),
    ("CARD", "4111 1111 1111 1111"),
    ("CARD", "5500-0000-0000-0004"),
    ("IBAN", "DE89 3704 0044 0532 0130 00"),
]
_AROUND = ["", " ", "電話", "カード", "：", "。", "\u3000", "（", "）", "、", "é", "\n"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.sampled_from(_VALUES),
    script=st.sampled_from([_FULL_WIDTH, _ARABIC_INDIC]),
    before=st.sampled_from(_AROUND),
    after=st.sampled_from(_AROUND),
    encoding=st.sampled_from(["as is", "json", "repr"]),
)
def test_a_value_written_in_other_digits_is_replaced_where_it_is_written(
    value: tuple[str, str], script: dict[int, str], before: str, after: str, encoding: str
) -> None:
    """Full-width or Arabic-Indic digits (and full-width separators) read as ASCII ones: the
    value is found where it is written, replaced whole, the same marker as written in ASCII
    digits (its normal form is the same). (JSON written with `ensure_ascii`, `\\uff14`, is not:
    docs/privacy.md.)"""
    label, ascii_value = value
    other = ascii_value.translate(script)
    text = f"{before}{other}{after} and {ascii_value}"
    if encoding == "json":
        text = json.dumps(text, ensure_ascii=False)[1:-1]
    elif encoding == "repr":
        text = repr(text)[1:-1]
    for compiled in (True, False):
        redaction = POLICY.start() if compiled else Redaction(_scanner(Scanner, False))
        redacted = redaction.text(text)
        assert other not in redacted and ascii_value not in redacted, redacted
        assert redacted.count(f"<{label}_1>") == 2, redacted
