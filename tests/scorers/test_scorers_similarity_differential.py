"""Content similarity against its former code (kept here as the oracle): the bigram count's
shared share by `2 min(a, b) = a + b - |a - b|`, the one-slice ASCII path without a frame, and
the separator test by substring search, all give exactly the former results."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from scorewatch.scorers import _text
from scorewatch.scorers._text import js_drop_spaces, utf16_units
from scorewatch.scorers.content_similarity import (
    _SLICE,
    _byte_pairs,
    _dice,
    _shared_share,
    compare_two_strings,
)

pytestmark = pytest.mark.unit

# -- the former code, as it was on main -----------------------------------------------------

_OLD_SEPARATORS = re.compile("[\x1c-\x1f]")


def _old_splits_as_js(text: str) -> bool:
    return text.isascii() and _OLD_SEPARATORS.search(text) is None


def _old_bigrams(
    units: Sequence[Any], pairs: Callable[[Any], Iterable[Any]] = pairwise
) -> Counter[Any]:
    if len(units) <= _SLICE + 1:
        return Counter(pairs(units))
    counts: Counter[Any] = Counter()
    for start in range(0, len(units) - 1, _SLICE):
        counts.update(pairs(units[start : start + _SLICE + 1]))
    return counts


def _old_shared_share(first_counts: Counter[Any], second_counts: Counter[Any], pairs: int) -> float:
    both = first_counts.keys() & second_counts.keys()
    shared = sum(
        map(min, map(first_counts.__getitem__, both), map(second_counts.__getitem__, both))
    )
    return 2.0 * shared / pairs


def _old_dice(first: str, second: str) -> float:
    if first == second:
        return 1
    if first.isascii() and second.isascii():
        if len(first) < 2 or len(second) < 2:
            return 0
        return _old_shared_share(
            _old_bigrams(first.encode("ascii"), _byte_pairs),
            _old_bigrams(second.encode("ascii"), _byte_pairs),
            len(first) + len(second) - 2,
        )
    a, b = utf16_units(first, second)
    if len(a) < 2 or len(b) < 2:
        return 0
    return _old_shared_share(_old_bigrams(a), _old_bigrams(b), len(a) + len(b) - 2)


# Few letters, so that bigrams repeat (counts above one on both sides); separators, white space,
# non-ASCII and astral characters for the other paths.
_FEW = st.text(alphabet="aabbc", max_size=60)
_ANY = st.one_of(
    _FEW,
    st.text(alphabet="ab \t\x1c\x1d\x1e\x1f\u00a0é😀", max_size=40),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=80),
    st.text(max_size=40),
)


@given(_ANY, _ANY)
@example("whatisourrefundpolicyforitemsboughtinasale?", "saleitemscanberefundedwithin30days.7")
@example("aaaa", "aa")
@example("ab" * (_SLICE // 2 + 3), "ba" * (_SLICE // 2 + 1) + "c")  # over one slice
def test_dice_is_the_former_dice(first: str, second: str) -> None:
    new, old = _dice(first, second), _old_dice(first, second)
    assert (type(new), new) == (type(old), old)
    new = compare_two_strings(first, second)
    old = _old_dice(js_drop_spaces(first), js_drop_spaces(second))
    assert (type(new), new) == (type(old), old)


@given(
    st.dictionaries(st.integers(0, 30), st.integers(1, 5), max_size=20),
    st.dictionaries(st.integers(0, 30), st.integers(1, 5), max_size=20),
    st.integers(1, 200),
)
def test_shared_share_is_the_former_sum_of_minimums(
    first: dict[int, int], second: dict[int, int], pairs: int
) -> None:
    new = _shared_share(Counter(first), Counter(second), pairs)
    old = _old_shared_share(Counter(first), Counter(second), pairs)
    assert (type(new), new) == (type(old), old)


@given(st.one_of(st.text(), st.text(alphabet="ab \t\n\x1b\x1c\x1d\x1e\x1f\x20é")))
def test_splits_as_js_is_the_former_regex_test(text: str) -> None:
    assert _text._splits_as_js(text) is _old_splits_as_js(text)
