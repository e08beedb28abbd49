"""The completeness scorer: how many of the input's elements does the output cover?

Model-free and deterministic. The coverage rule is the reference system's: an input element
is covered by an output element that equals it (elements of 3 characters or fewer) or that
contains it, or is contained in it, with the shorter at more than 60% of the longer's
length. Score: covered / input elements; with no input elements, 1 if the output has none
either, else 0. Not rounded, 0..1, higher is better, no judge call.

The elements are an approximation. The reference takes them from the JS NLP library
`compromise` (its nouns, its verbs turned to the infinitive, its topics, its terms), which has
no Python counterpart. Here a text's elements are its words, accents stripped, lower-cased,
cut at anything but `a-z0-9` as the reference cuts them, then reduced to their Snowball
(English) stems: "jumps" and "jumped" both give "jump", as the reference's infinitives do.
`tests/scorers/test_scorers_reference_model_free.py` measures the gap on texts recorded from the
reference: most scores are equal, the rest differ mostly where `compromise` drops auxiliary
verbs ("has been waiting" -> "wait").

The texts are the run's input messages and output messages, each joined by `", "`. The
preprocess result has the reference's keys: `inputElements`, `outputElements`,
`missingElements` (input elements not among the output's), `elementCounts`.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

from ..core import Scorer, StepContext
from ._card import ScorerCard, prebuilt
from ._measured import measured_scorer
from ._text import joined_input_text, joined_output_text, js_lower, js_number, pieces

__all__ = ["COMPLETENESS_SCORER_ID", "coverage", "create_completeness_scorer", "key_elements"]

COMPLETENESS_SCORER_ID = "completeness-scorer"

_CARD = ScorerCard(
    name="completeness",
    id=COMPLETENESS_SCORER_ID,
    scorer_name="Completeness Scorer",
    description="Measures how many of the input's words (stems) the output covers",
)

_MARKS = re.compile("[\u0300-\u036f]")
_NOT_WORD = re.compile("[^a-z0-9]+")
# Output elements of one length, joined by this; elements never contain it (a-z0-9 only), and
# an element that does is compared one by one.
_SEPARATOR = "\x00"
# Up to this length, the shorter elements an input element may contain are found by slicing it;
# beyond, by scanning the output elements of those lengths.
_SLICED = 32


def _normalize(text: str) -> str:
    return js_lower(_MARKS.sub("", unicodedata.normalize("NFD", text)))


_local = threading.local()


def _stemmer() -> Any:
    # One per thread: a Snowball stemmer keeps the word being stemmed in its own fields, and
    # large runs are scored in worker threads (live.engine).
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # The Snowball stemmers are pure Python; live traffic repeats words, so stems are cached.
    stem: str = _stemmer().stemWord(word)
    return stem


def key_elements(text: str) -> list[str]:
    """The distinct stems of `text`'s words, in order of first appearance."""
    words = [
        word for piece in pieces(_normalize(text)) for word in _NOT_WORD.sub(" ", piece).split()
    ]
    return list(dict.fromkeys(_stem(word) for word in words))


def coverage(original: list[str], simplified: list[str]) -> float:
    """Share of `original` covered by `simplified`, by the reference's rule, without comparing
    every pair: output elements are grouped by length, and an input element is looked for only
    in the groups whose length can satisfy the 60% rule (one C-level search per group)."""
    if not original:
        return 1 if not simplified else 0
    present = set(simplified)
    by_length: dict[int, list[str]] = {}
    for element in present:
        by_length.setdefault(len(element), []).append(element)
    joined = {length: _SEPARATOR.join(group) for length, group in by_length.items()}
    longest = max(by_length, default=0)

    def inside_longer(element: str) -> bool:
        size = len(element)
        for length in range(size, longest + 1):
            if not size / length > 0.6:
                return False
            if length not in joined:
                continue
            if _SEPARATOR in element:
                if any(element in other for other in by_length[length]):
                    return True
            elif element in joined[length]:
                return True
        return False

    def holds_shorter(element: str) -> bool:
        size = len(element)
        sizes = [k for k in range(size - 1, 0, -1) if k / size > 0.6]
        if size <= _SLICED:
            return any(element[i : i + k] in present for k in sizes for i in range(size - k + 1))
        return any(other in element for k in sizes for other in by_length.get(k, ()))

    def covered(element: str) -> bool:
        if len(element) <= 3:
            return element in present
        return inside_longer(element) or holds_shorter(element)

    return sum(1 for element in original if covered(element)) / len(original)


@prebuilt(_CARD)
def create_completeness_scorer() -> Scorer:
    """Coverage of the input's elements (word stems) in the output.

    Range 0..1, higher is better, no judge call.
    """

    def extract(ctx: StepContext) -> dict[str, Any]:
        if ctx.run.input is None or ctx.run.output is None:
            raise ValueError("the run's input and output must be given")
        input_elements = key_elements(joined_input_text(ctx.run.input).strip())
        output_elements = key_elements(joined_output_text(ctx.run.output).strip())
        present = set(output_elements)
        return {
            "inputElements": input_elements,
            "outputElements": output_elements,
            "missingElements": [e for e in input_elements if e not in present],
            "elementCounts": {"input": len(input_elements), "output": len(output_elements)},
        }

    return measured_scorer(
        _CARD,
        measure=extract,
        score=lambda found: js_number(coverage(found["inputElements"], found["outputElements"])),
    )
