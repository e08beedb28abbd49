"""The content-similarity scorer: how alike are the input and the output, bigram by bigram?

Model-free and deterministic, with the reference system's numbers: the similarity is the
Sørensen-Dice coefficient of the two texts' character bigrams, as the `string-similarity`
package computes it (`compareTwoStrings`): white space is removed first, equal texts give 1,
a text shorter than two characters gives 0, otherwise 2 x shared bigrams / (bigrams of the
first + bigrams of the second), a bigram shared as many times as it occurs in both. Characters
are UTF-16 units as in the reference (an emoji is two).

The texts are the run's input messages and output messages, each joined by `", "`; a ground
truth on the run is not used (the reference compares the output with the input). Options:
`ignore_case` (default True: both texts lower-cased), `ignore_whitespace` (default True: runs
of white space become one space and the ends are trimmed; the score is the same either way,
since the comparison drops white space, but `processedInput`/`processedOutput` show it).

Score: 0..1, higher is better, not rounded; no judge call. Linear time in the text length.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from operator import sub
from typing import Any

from ..core import Scorer, StepContext
from ._card import ScorerCard, prebuilt
from ._measured import measured_scorer
from ._text import (
    joined_input_text,
    joined_output_text,
    js_collapse_spaces,
    js_drop_spaces,
    js_lower,
    js_number,
    utf16_units,
)

__all__ = [
    "CONTENT_SIMILARITY_SCORER_ID",
    "compare_two_strings",
    "create_content_similarity_scorer",
]

CONTENT_SIMILARITY_SCORER_ID = "content-similarity-scorer"

_CARD = ScorerCard(
    name="content-similarity",
    id=CONTENT_SIMILARITY_SCORER_ID,
    scorer_name="Content Similarity Scorer",
    description="Measures how alike the input and the output are (Dice coefficient of "
    "their character bigrams)",
)


def compare_two_strings(first: str, second: str) -> float:
    """`string-similarity`'s bigram Dice coefficient of two texts, white space ignored."""
    return _dice(_without_spaces(first), _without_spaces(second))


def _dice(first: str, second: str) -> float:
    """`compare_two_strings` of two texts that hold no white space."""
    if first == second:
        return 1
    if first.isascii() and second.isascii():
        if len(first) < 2 or len(second) < 2:
            return 0
        # ASCII text is its own UTF-16 units, one byte each: its bigrams counted as the 16-bit
        # integers of its byte pairs (hashed and freed for less than tuples of characters).
        pairs = len(first) + len(second) - 2
        if pairs <= _FEW_PAIRS:
            return (
                _twice_shared_few(
                    _byte_pairs(first.encode("ascii").translate(_SPREAD)),
                    _byte_pairs(second.encode("ascii").translate(_SPREAD)),
                )
                / pairs
            )
        # A text of one slice (nearly every text scored) is counted here, without a frame.
        if len(first) <= _SLICE and len(second) <= _SLICE:
            return _shared_share(
                Counter(_byte_pairs(first.encode("ascii"))),
                Counter(_byte_pairs(second.encode("ascii"))),
                pairs,
            )
        return _shared_share(
            _bigrams(first.encode("ascii"), _byte_pairs),
            _bigrams(second.encode("ascii"), _byte_pairs),
            pairs,
        )
    a, b = utf16_units(first, second)
    if len(a) < 2 or len(b) < 2:
        return 0
    return _shared_share(_bigrams(a), _bigrams(b), len(a) + len(b) - 2)


def _shared_share(first_counts: Counter[Any], second_counts: Counter[Any], pairs: int) -> float:
    """2 x the bigrams both texts hold / `pairs`, the bigrams of both."""
    # The size of the multiset intersection, summed directly (`Counter.__and__` builds a third
    # Counter, indexing the other for every key of the first, absent ones through `__missing__`):
    # the bigrams both hold by a set operation, then their two counts, all in C loops (no Python
    # frame per bigram). Twice the smaller of two counts is their sum less their distance
    # (2 min(a, b) = a + b - |a - b|), so no call of `min` per bigram. Integers: the same sum in
    # any order, and `2 x shared / pairs` is the quotient of the same two integers.
    both = first_counts.keys() & second_counts.keys()
    counts = list(map(first_counts.__getitem__, both))
    others = list(map(second_counts.__getitem__, both))
    twice_shared: int = sum(counts) + sum(others) - sum(map(abs, map(sub, counts, others)))
    return twice_shared / pairs


# Short texts (a question and its answer of a sentence or two) are compared by sets of their
# bigrams, which cost half of two counts: a set and a lookup per bigram, where a count looks each
# bigram up and then stores it. The set of shared bigrams is the multiset intersection unless both
# texts repeat a shared bigram, seldom in short texts and checked: then the shared bigrams are
# counted after all, and the sets were spent for nothing. Longer texts nearly always repeat one
# (`th`, `in`, `er`), so they are counted at once.
_FEW_PAIRS = 126

# The byte of each ASCII character multiplied by 5 modulo 128 (a permutation, so bigrams keep
# their identity): letters spread over the low seven bits rather than the 26 consecutive values
# of `a`..`z`. A small set indexes a bigram integer by its low byte, the first character's; with
# letters consecutive, bigrams crowd into one run of slots that every lookup of an absent bigram
# walks to its end.
_SPREAD = bytes([code * 5 % 128 for code in range(128)]) + bytes(range(128, 256))


def _twice_shared_few(first_pairs: list[int], second_pairs: list[int]) -> int:
    """2 x the bigrams both lists hold, each as many times as it occurs in both."""
    distinct = set(first_pairs)
    both = distinct.intersection(second_pairs)
    if len(distinct) < len(first_pairs) and both:
        # The first repeats a bigram: is it a shared one, and does the second repeat one too?
        # (A shared bigram once in either text is shared once.) Each a C loop, no frame.
        shared_in_first = list(filter(both.__contains__, first_pairs))
        if len(shared_in_first) > len(both):
            shared_in_second = list(filter(both.__contains__, second_pairs))
            if len(shared_in_second) > len(both):
                return _twice_shared_counted(shared_in_first, shared_in_second)
    return 2 * len(both)


def _twice_shared_counted(first: list[int], second: list[int]) -> int:
    """2 x the multiset intersection of two lists of the same distinct bigrams: 2 min(a, b) =
    a + b - |a - b| summed, the counts of the second read in the order of the first's."""
    counts, others = Counter(first), Counter(second)
    distance: int = sum(map(abs, map(sub, counts.values(), map(others.__getitem__, counts))))
    return len(first) + len(second) - distance


# Counting and substituting are C loops that keep the GIL until they return; done a slice at a
# time, a megabyte scored in a worker thread never holds the event loop's thread up for long.
_SLICE = 16384


def _without_spaces(text: str) -> str:
    if len(text) <= _SLICE:
        return js_drop_spaces(text)
    return "".join(
        js_drop_spaces(text[start : start + _SLICE]) for start in range(0, len(text), _SLICE)
    )


def _bigrams(
    units: Sequence[Any], pairs: Callable[[Any], Iterable[Any]] = pairwise
) -> Counter[Any]:
    """The count of each bigram of `units` (two or more), `pairs` making the bigrams of a
    slice: tuples of adjacent units, unless told otherwise."""
    # A text of one slice (nearly every text scored) is counted without slicing a copy.
    if len(units) <= _SLICE + 1:
        return Counter(pairs(units))
    counts: Counter[Any] = Counter()
    for start in range(0, len(units) - 1, _SLICE):  # each slice overlaps the next by one unit
        counts.update(pairs(units[start : start + _SLICE + 1]))
    return counts


def _byte_pairs(data: bytes) -> list[int]:
    """The bigrams of ASCII bytes (two or more), each as the 16-bit integer of its two bytes:
    those starting at even offsets, then those at odd ones (a count has no order). One integer
    per pair of bytes either way, so two texts' bigrams compare."""
    size = len(data)
    # Both runs of pairs in one buffer: one view, one cast and one list rather than two of each.
    evens_then_odds = data[: size - size % 2] + data[1 : size - (size - 1) % 2]
    return memoryview(evens_then_odds).cast("H").tolist()


@prebuilt(_CARD)
def create_content_similarity_scorer(
    *, ignore_case: bool = True, ignore_whitespace: bool = True
) -> Scorer:
    """Bigram Dice similarity between the run's input and output.

    Range 0..1, higher is better, no judge call.
    """

    # The options are read once, here, rather than in every run's two normalisations.
    normalize: Callable[[str], str]
    if ignore_case and ignore_whitespace:

        def normalize(text: str) -> str:
            return js_collapse_spaces(js_lower(text))

    elif ignore_case:
        normalize = js_lower
    elif ignore_whitespace:
        normalize = js_collapse_spaces
    else:

        def normalize(text: str) -> str:
            return text

    def compare(ctx: StepContext) -> dict[str, Any]:
        return {
            "processedInput": normalize(joined_input_text(ctx.run.input)),
            "processedOutput": normalize(joined_output_text(ctx.run.output)),
        }

    def similarity(texts: dict[str, Any]) -> float | int:
        first, second = texts["processedInput"], texts["processedOutput"]
        if ignore_whitespace:
            # Collapsed: its only white space is single spaces, dropped without a second scan
            # for every kind of JavaScript white space.
            return js_number(_dice(first.replace(" ", ""), second.replace(" ", "")))
        return js_number(compare_two_strings(first, second))

    return measured_scorer(_CARD, measure=compare, score=similarity)
