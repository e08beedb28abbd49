"""Content similarity against its former code (kept here as the oracle): the bigram count's
shared share by `2 min(a, b) = a + b - |a - b|`, the one-slice ASCII path without a frame, the
separator test by substring search, short texts compared by sets of spread bigram integers, and
printable ASCII collapsed without a split, all give exactly the former results."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from operator import sub
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from scorewatch.scorers import _text
from scorewatch.scorers._text import (
    JS_SPACES,
    js_collapse_spaces,
    js_drop_spaces,
    js_trim,
    utf16_units,
)
from scorewatch.scorers.content_similarity import (
    _FEW_PAIRS,
    _SLICE,
    _byte_pairs,
    _dice,
    _shared_share,
    _twice_shared_few,
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


# -- the counted `_dice`, as it was before short texts were compared by sets -------------------


def _counted_byte_pairs(data: bytes) -> list[int]:
    size = len(data)
    codes = memoryview(data[: size - size % 2]).cast("H").tolist()
    codes += memoryview(data[1 : size - (size - 1) % 2]).cast("H").tolist()
    return codes


def _counted_shared_share(
    first_counts: Counter[Any], second_counts: Counter[Any], pairs: int
) -> float:
    both = first_counts.keys() & second_counts.keys()
    counts = list(map(first_counts.__getitem__, both))
    others = list(map(second_counts.__getitem__, both))
    twice_shared: int = sum(counts) + sum(others) - sum(map(abs, map(sub, counts, others)))
    return twice_shared / pairs


def _counted_dice(first: str, second: str) -> float:
    if first == second:
        return 1
    if first.isascii() and second.isascii():
        if len(first) < 2 or len(second) < 2:
            return 0
        pairs = len(first) + len(second) - 2
        if len(first) <= _SLICE and len(second) <= _SLICE:
            return _counted_shared_share(
                Counter(_counted_byte_pairs(first.encode("ascii"))),
                Counter(_counted_byte_pairs(second.encode("ascii"))),
                pairs,
            )
        return _counted_shared_share(
            _old_bigrams(first.encode("ascii"), _counted_byte_pairs),
            _old_bigrams(second.encode("ascii"), _counted_byte_pairs),
            pairs,
        )
    a, b = utf16_units(first, second)
    if len(a) < 2 or len(b) < 2:
        return 0
    return _counted_shared_share(_old_bigrams(a), _old_bigrams(b), len(a) + len(b) - 2)


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


# Short texts whose bigrams repeat on one side, on both, or not at all (the set comparison's three
# exits), of every length from 0 (the early returns) to past `_FEW_PAIRS` (the counted path);
# ASCII control characters and DEL (their bytes spread too), non-ASCII and astral characters.
_SHORT = st.one_of(
    st.text(alphabet="ab", max_size=8),
    st.text(alphabet="abcde", max_size=70),
    st.text(alphabet="thequickbrownfoxjumpsoverthelazydog.", max_size=90),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=70),
    st.text(alphabet="ab\x00\x7f\x1céß😀", max_size=20),
)
_LONG = st.builds(
    lambda text, times: text * times,
    st.text(alphabet="abc😀é", min_size=1, max_size=5),
    st.just(_SLICE // 3 + 7),
)


@given(st.one_of(_SHORT, _SHORT, _LONG), st.one_of(_SHORT, _SHORT, _LONG))
@example("whatisourrefundpolicyforitemsboughtinasale?", "saleitemscanberefundedwithin30days.7")
@example("aaaa", "aa")
@example("a" * (_FEW_PAIRS // 2 + 1), "a" * (_FEW_PAIRS // 2 + 1) + "b")  # just counted
@example("a" * (_FEW_PAIRS // 2 + 1), "a" * (_FEW_PAIRS // 2) + "b")  # just by sets
@example("abab", "babab")  # both repeat a shared bigram
@example("ab" * (_SLICE // 2 + 3), "ba" * (_SLICE // 2 + 1) + "c")  # over one slice
def test_dice_is_the_counted_dice(first: str, second: str) -> None:
    new, old = _dice(first, second), _counted_dice(first, second)
    assert (type(new), new) == (type(old), old)
    new = compare_two_strings(first, second)
    old = _counted_dice(JS_SPACES.sub("", first), JS_SPACES.sub("", second))
    assert (type(new), new) == (type(old), old)


@given(
    st.lists(st.integers(0, 12), max_size=40),
    st.lists(st.integers(0, 12), max_size=40),
)
def test_twice_shared_few_is_twice_the_multiset_intersection(
    first: list[int], second: list[int]
) -> None:
    expected = 2 * sum((Counter(first) & Counter(second)).values())
    assert _twice_shared_few(first, second) == expected


# Printable ASCII with spaces at the ends, doubled or single, and the characters next to the
# printable range (controls, separators, DEL) that must take the other paths.
_ALMOST_PRINTABLE = st.text(
    alphabet=st.sampled_from(list(" ab.~\x7f\x1f\t\né")), max_size=20
) | st.text(alphabet=" xy", max_size=12)


@given(_ALMOST_PRINTABLE)
@example("  a b  c ")
@example("a b")
@example("")
def test_white_space_of_printable_ascii_is_the_regex_substitution(text: str) -> None:
    assert js_collapse_spaces(text) == js_trim(JS_SPACES.sub(" ", text))
    assert js_drop_spaces(text) == JS_SPACES.sub("", text)
