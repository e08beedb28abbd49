"""The first value's shortcuts change nothing: the replacing pass that finds each candidate's
text by walking on from the one before (no table of where every text starts) gives what each
text redacted alone gives, and a row's content columns redacted column by column (an empty
column stored as it is, not walked) are what the plain walk with the run's redactor stores."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorewatch.privacy import PrivacyPolicy
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
