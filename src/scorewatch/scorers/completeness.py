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
`tests/test_scorers_reference_model_free.py` measures the gap on texts recorded from the
reference: most scores are equal, the rest differ mostly where `compromise` drops auxiliary
verbs ("has been waiting" -> "wait").

The texts are the run's input messages and output messages, each joined by `", "`. The
preprocess result has the reference's keys: `inputElements`, `outputElements`,
`missingElements` (input elements not among the output's), `elementCounts`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

from ..core import Scorer, StepContext
from ._js import js_lower, js_number
from ._measured import measured_scorer
from ._text import joined_input_text, joined_output_text

__all__ = ["COMPLETENESS_SCORER_ID", "coverage", "create_completeness_scorer", "key_elements"]

COMPLETENESS_SCORER_ID = "completeness-scorer"

_MARKS = re.compile("[\u0300-\u036f]")
_NOT_WORD = re.compile("[^a-z0-9]+")
# Above this length, substrings are not indexed (hostile "words" would make the index
# quadratic); such elements are compared one by one, as the reference compares all.
_INDEXED = 64


def _normalize(text: str) -> str:
    return js_lower(_MARKS.sub("", unicodedata.normalize("NFD", text)))


@cache
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # The Snowball stemmers are pure Python; live traffic repeats words, so stems are cached.
    stem: str = _stemmer().stemWord(word)
    return stem


def key_elements(text: str) -> list[str]:
    """The distinct stems of `text`'s words, in order of first appearance."""
    return list(dict.fromkeys(_stem(word) for word in _NOT_WORD.sub(" ", _normalize(text)).split()))


def _ratio_ok(shorter: str, longer: str) -> bool:
    return len(shorter) / len(longer) > 0.6


def coverage(original: list[str], simplified: list[str]) -> float:
    """Share of `original` covered by `simplified`, by the reference's rule, without comparing
    every pair: short words through a set, contained and containing words through indexes."""
    if not original:
        return 1 if not simplified else 0
    present = set(simplified)
    # Substrings t of an output element s with len(t)/len(s) > 0.6: an input element equal
    # to one is contained in s, long enough.
    inside: set[str] = set()
    long_outputs: list[str] = []
    for s in present:
        if len(s) > _INDEXED:
            long_outputs.append(s)
            continue
        for size in range(len(s), 0, -1):
            if not size / len(s) > 0.6:
                break
            inside.update(s[i : i + size] for i in range(len(s) - size + 1))

    def covered(element: str) -> bool:
        if len(element) <= 3:
            return element in present
        if element in inside:
            return True
        if len(element) <= _INDEXED:
            return any(_contains_long(element, s) for s in long_outputs) or any(
                element[i : i + size] in present
                for size in _sizes_within(len(element))
                for i in range(len(element) - size + 1)
            )
        return any(_pair_matches(element, s) for s in present)

    return sum(1 for element in original if covered(element)) / len(original)


def _sizes_within(length: int) -> Iterable[int]:
    """Lengths of a shorter element that may cover one of `length` characters."""
    return (size for size in range(length - 1, 0, -1) if size / length > 0.6)


def _contains_long(element: str, long_output: str) -> bool:
    return element in long_output and _ratio_ok(element, long_output)


def _pair_matches(element: str, other: str) -> bool:
    longer, shorter = (element, other) if len(element) > len(other) else (other, element)
    return shorter in longer and _ratio_ok(shorter, longer)


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
        id=COMPLETENESS_SCORER_ID,
        name="Completeness Scorer",
        description="Measures how many of the input's words (stems) the output covers",
        measure=extract,
        score=lambda found: js_number(coverage(found["inputElements"], found["outputElements"])),
    )
