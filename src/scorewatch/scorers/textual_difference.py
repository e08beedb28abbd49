"""The textual-difference scorer: how alike are the input and the output, character by character?

Model-free and deterministic, with the reference system's numbers: the score is the ratio
2 x (length of the longest common subsequence of characters) / (sum of the two lengths), the
formula difflib's `SequenceMatcher.ratio()` uses, but with a true LCS where difflib matches
blocks. Identical texts give 1; one empty text against a non-empty one gives 0. Lengths are
counted in UTF-16 units as the reference counts them (an emoji is two), so a text with emoji
scores the same in both systems.

The texts are the run's input messages and output messages, each joined by `", "` (the
reference's reading). A ground truth on the run is not used: the reference compares the
output with the input.

The LCS length comes from RapidFuzz's bit-parallel `LCSseq` (C++): O(n x m / 64) time and
O(n) memory where the reference fills an n x m table, so long texts stay cheap.

The preprocess result carries the reference's keys: `ratio`, `changes` (words inserted,
removed or replaced; a difference in white space only counts at least 1), `lengthDiff` (the
relative difference in length) and `confidence` (1 - lengthDiff). Score: `ratio`, 0..1,
higher means more alike, not rounded; no judge call.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rapidfuzz.distance import LCSseq

from ..core import Scorer, StepContext
from ._card import ScorerCard, prebuilt
from ._measured import measured_scorer
from ._text import (
    JS_SPACES,
    joined_input_text,
    joined_output_text,
    js_collapse_spaces,
    js_number,
    utf16_len,
    utf16_units,
)

__all__ = [
    "TEXTUAL_DIFFERENCE_SCORER_ID",
    "count_changes",
    "create_textual_difference_scorer",
    "lcs_ratio",
]

TEXTUAL_DIFFERENCE_SCORER_ID = "textual-difference-scorer"

_CARD = ScorerCard(
    name="textual-difference",
    id=TEXTUAL_DIFFERENCE_SCORER_ID,
    scorer_name="Textual Difference Scorer",
    description="Measures how alike the input and the output are, character by character "
    "(longest common subsequence ratio)",
)


def lcs_ratio(first: str, second: str) -> float:
    """2 x LCS / total length, in UTF-16 units; 1 for equal texts, 0 when one is empty."""
    if first == second:
        return 1
    if not first or not second:
        return 0
    a, b = utf16_units(first, second)
    matches = LCSseq.similarity(a, b)
    return 2 * matches / (len(a) + len(b))


def _words(text: str) -> list[str]:
    return [word for word in JS_SPACES.split(text) if word]


def count_changes(first: str, second: str) -> int:
    """Words inserted, removed or replaced between the texts (the reference's count)."""
    normal_first = js_collapse_spaces(first)
    normal_second = js_collapse_spaces(second)
    if normal_first == normal_second:
        if first != second:
            return abs(len(_words(first)) - len(_words(second))) or 1
        return 0
    words_first = [w for w in normal_first.split(" ") if w]
    words_second = [w for w in normal_second.split(" ") if w]
    if not words_first or not words_second:
        return len(words_first) or len(words_second)
    # The reference pairs each word with the first unused equal word; that pairs
    # min(count, count) of every word, which a counter finds in linear time.
    matching = sum((Counter(words_first) & Counter(words_second)).values())
    return max(len(words_first), len(words_second)) - matching


@prebuilt(_CARD)
def create_textual_difference_scorer() -> Scorer:
    """LCS similarity between the run's input and output (the reference's ratio).

    Range 0..1, higher means more alike, no judge call.
    """

    def compare(ctx: StepContext) -> dict[str, Any]:
        first = joined_input_text(ctx.run.input)
        second = joined_output_text(ctx.run.output)
        longest = max(utf16_len(first), utf16_len(second))
        length_diff = abs(utf16_len(first) - utf16_len(second)) / longest if longest else 0
        return {
            "ratio": js_number(lcs_ratio(first, second)),
            "confidence": js_number(1 - length_diff),
            "changes": count_changes(first, second),
            "lengthDiff": js_number(length_diff),
        }

    return measured_scorer(
        _CARD,
        measure=compare,
        score=lambda measurement: measurement["ratio"],
    )
