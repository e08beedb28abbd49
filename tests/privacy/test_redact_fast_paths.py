"""The first value's shortcuts change nothing: the replacing pass that finds each candidate's
text by walking on from the one before (no table of where every text starts) gives what each
text redacted alone gives, and a row's content columns redacted column by column (an empty
column stored as it is, not walked) are what the plain walk with the run's redactor stores."""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import accumulate

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scorewatch.privacy import PrivacyPolicy
from scorewatch.privacy.policy import _new, _Redacted
from scorewatch.privacy.scanner import _EMAIL, _EMAIL_WINDOW, _END, _START, _UNSEEN, Found, Scanner
from scorewatch.sinks.storable import _walk, redacts_any, storable_columns

pytestmark = pytest.mark.unit

_POLICY = PrivacyPolicy(redact=["all"])
_WITH_PATTERNS = PrivacyPolicy(redact=["all"], patterns={"TICKET": r"T-\d{3}"})

# Values of several kinds, repeated within and across texts, between plain words.
_VALUES = [
    "ada.lovelace@example.com",
    "ADA.LOVELACE@example.com",
    "x@y.co",
    "+44 20 7946 0958",
    "(415) 555-0132",
    "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00",
    "203.0.113.42",
    "2001:db8::1",
    "Bearer eyAbCdEfGhIjKlMnOp123",
    "sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy",
    "T-123",
]
_WORDS = ["a", "call", "paid", "the", "12", "x", "é", "\n", "\x00", ""]


@st.composite
def _text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(_VALUES + _WORDS), max_size=8))
    return draw(st.sampled_from([" ", ", ", "\n", ""])).join(parts)


def _alone(policy: PrivacyPolicy, texts: list[str]) -> list[str]:
    """Each text redacted on its own, in order, by one run (markers numbered by first
    appearance): what the batch's one pass must give."""
    run = policy.start()
    return [run.text(text) for text in texts]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_text(), min_size=1, max_size=40, unique=True),
    st.sampled_from([_POLICY, _WITH_PATTERNS]),
)
def test_a_batch_redacts_as_its_texts_read_one_by_one(
    texts: list[str], policy: PrivacyPolicy
) -> None:
    """Many texts (short ones, empty ones, ones holding line breaks, values in texts far apart,
    values repeated across texts): the batch's pass gives every text's redacted form and the
    markers a run reading them one at a time gives."""
    run = policy.start()
    changed = run.prepare(texts)
    expected = _alone(policy, texts)
    assert [run.text(text) for text in texts] == expected
    assert changed == (expected != texts)


_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([1.5, math.nan, math.inf, -math.inf]),
    _text(),
)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_text(), inner, max_size=4),
    ),
    max_leaves=12,
)
_COLUMNS = ["input", "output", "reason", "judge", "error", "analyzeStepResult", "extractPrompt"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_COLUMNS), _VALUE, min_size=1))
def test_content_columns_store_what_the_plain_walk_stores(columns: dict[str, object]) -> None:
    """`storable_columns` (texts and empty columns handled in its loop) against the one walk
    it stands for, `_walk` with the run's redactor, every column: equal values, equal types,
    the same markers."""
    run = _POLICY.start()
    redacts_any(run, [columns])
    reference = _POLICY.start()
    redacts_any(reference, [columns])
    expected = {name: _walk(value, False, 1, reference.text) for name, value in columns.items()}
    got = storable_columns(columns, run)
    assert repr(got) == repr(expected)  # (repr: NaN is not equal to itself)
    assert list(got) == list(columns)
    assert run.markers == reference.markers


def test_an_address_whose_window_repeats_with_its_at_sign_elsewhere_is_found() -> None:
    """Two `@`s whose windows are the same text (the first clipped by the address before it,
    both by the end of the batch): the second is still read as an address of its own. Before
    the place of the `@` was part of the remembered window, the second text came out as it
    was."""
    texts = ["ada.lovelace@example.comada.lovelace@example.com", "ada.lovelace@example.com"]
    run = _POLICY.start()
    run.prepare(texts)
    assert [run.text(text) for text in texts] == ["<EMAIL_1>@example.com", "<EMAIL_2>"]


class _WindowedAddresses(Scanner):
    """The scanner with its e-mail step as it was before the runs around each `@` were
    found in one search (`_around`): each `@` read in its own window, one at a time, the
    outcome remembered by the window and where the `@` is in it. The oracle."""

    def _emails(self, found: Found, text: str) -> None:
        before, after = _EMAIL_WINDOW
        done = 0
        at = text.find("@")
        match, local, seen = self._email.match, self._local.match, self._addresses
        found.sort(key=_START)
        starts = list(map(_START, found))
        reach = list(accumulate(map(_END, found), max))
        while at != -1:
            low, high = max(done, at - before), at + after
            if starts:
                secret = bisect_right(starts, at)
                if secret:
                    if reach[secret - 1] > at:
                        at = text.find("@", at + 1)
                        continue
                    low = max(low, reach[secret - 1])
                if secret < len(starts):
                    high = min(high, starts[secret])
            key = (at - low, text[low:high])
            address = seen.get(key, _UNSEEN)
            if address is _UNSEEN:
                part = local(text, low, at)
                m = None if part is None else match(text, part.start(), high)
                address = seen[key] = (
                    None if m is None else (m.start() - low, m.end() - low, m.group().lower())
                )
            if address is not None and address[0] <= at - low < address[1]:
                start, end, normal = low + address[0], low + address[1], address[2]
                found.append((_EMAIL, start, end, "EMAIL", normal))
                done = end
                at = text.find("@", done)
            else:
                at = text.find("@", at + 1)


# Pieces of addresses and of what surrounds them: local and domain characters of several
# scripts, marks, `@`s alone and doubled, dots, runs longer than a local part (64) or a window
# (256) may take, digits after a domain, secrets an address may run into or hold.
_ADDRESS_PIECES = [
    "a",
    "ada",
    "Ada.Lovelace",
    "é",
    "\u0301",
    "日本",
    ".",
    "-",
    "_",
    "%",
    "+",
    "@",
    "@@",
    "example",
    ".com",
    ".co",
    ".c",
    "1",
    " ",
    "\n",
    ",",
    "a" * 60,
    "b" * 70,
    "x." * 130,
    "sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy",
    "sk-",
    "Bearer abcdefghijk",
    "api_key=abcdef123456",
]


@pytest.mark.parametrize("compiled", [True, False], ids=["hyperscan", "re"])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(st.sampled_from(_ADDRESS_PIECES), max_size=30).map("".join),
        min_size=1,
        max_size=4,
    )
)
@example(["a@b.cca@b.cc"])  # the second address's local part runs back into the first
@example(["sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy@example.com sk-" + "a" * 20 + "@x.co"])
def test_addresses_read_by_their_runs_are_what_their_windows_read(
    compiled: bool, texts: list[str]
) -> None:
    """The e-mail step reading each `@`'s runs (found for all `@`s in one search, the outcome
    remembered by them) finds the candidates the windowed reading finds, cold and warm, with
    secrets bounding the addresses: addresses one after another, local parts running back into
    the address before, a secret before, around or after an `@`, runs longer than a window."""
    policy = _POLICY
    new = Scanner(policy.redact, policy.patterns, policy.phone_region, compiled=compiled)
    old = _WindowedAddresses(policy.redact, policy.patterns, policy.phone_region, compiled=compiled)
    for _ in range(2):  # cold, then every outcome remembered
        assert new.find(texts) == old.find(texts)
        for text in texts:
            assert new.scan([text]) == old.scan([text])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_VALUE, max_size=6), st.booleans(), st.integers(0, 17))
def test_a_list_s_texts_are_scrubbed_as_the_walk_scrubs_each(
    items: list[object], redact: bool, depth: int
) -> None:
    """A list walked with the run's redactor, its texts scrubbed in the list's own loop, is
    what walking each item gives (the list's loop as it was: `_walk` of every item that is not
    an integer, a boolean or None)."""
    run = _POLICY.start()
    redacts_any(run, [items])
    expected = [
        item if type(item) in (int, bool, type(None)) else _walk(item, redact, depth + 1, run.text)
        for item in items
    ]
    got = _walk(items, redact, depth, run.text)
    assert repr(got) == repr(expected)
    assert [type(item) for item in got] == [type(item) for item in expected]


class _OldReplace(_Redacted):
    """The replacing pass before the walk to a candidate's text was shortened (the oracle)."""

    def _replace(self, texts: list[str], joined: str, found: Found) -> bool | None:
        short = self.scanner.short
        index, begin, limit = 0, 0, len(texts[0])
        at = 0 if limit >= short else limit + 1
        parts: list[str] = []
        changed: list[tuple[int, list[str]]] = []
        with self._lock:
            markers, numbers = self.markers.copy(), self._numbers.copy()
            for _, start, end, label, normal in found:
                if start > limit:
                    if parts:
                        parts.append(joined[at:limit])
                        changed.append((index, parts))
                        parts = []
                    while True:
                        index += 1
                        begin = limit + 1
                        limit = begin + len(texts[index])
                        if start <= limit:
                            break
                    at = begin if limit - begin >= short else limit + 1
                if end > limit or start < at:
                    if at > limit >= end:
                        continue
                    return None
                parts.append(joined[at:start])
                key = (label, normal)
                parts.append(markers.get(key) or _new(key, markers, numbers))
                at = end
            self.markers, self._numbers = markers, numbers
        if parts:
            parts.append(joined[at:limit])
            changed.append((index, parts))
        for index, parts in changed:
            self[texts[index]] = "".join(parts)
        return bool(changed)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(_text(), min_size=1, max_size=40, unique=True), min_size=1, max_size=3),
    st.sampled_from([_POLICY, _WITH_PATTERNS]),
)
def test_the_replacing_pass_is_the_former_one(
    batches: list[list[str]], policy: PrivacyPolicy
) -> None:
    """Differential against the former pass: the same redacted texts, markers and numbers,
    batch after batch of one run."""
    new, old = _Redacted(policy._scanner), _OldReplace(policy._scanner)
    for texts in batches:
        texts = [text for text in texts if text not in new]
        if texts:
            assert new.scan(texts) == old.scan(texts)
        assert dict(new) == dict(old) and new.markers == old.markers
