"""The completeness scorer: how many of the input's key words does the output cover?

Model-free and deterministic. The key elements of a text are its words minus stop words, reduced
to their stems, so "plants" in the question is covered by "plant" in the answer. Stop words come
from the `stop-words` package and stems from `snowballstemmer` (see `scorers._words`): both are
maintained, dependency-free and ship their data inside the package, so nothing is downloaded.

Score: covered input elements / input elements, in 0..1, higher is better, rounded half up to two
decimals. No judge call. When the input has no key elements the score is 1 if the output has none
either and 0 otherwise (the reference system's rule). The input is every input message (or the
run input string); the output is every assistant message.
"""

from __future__ import annotations

from typing import Any

from ..core import Scorer, StepContext
from ._measured import measured_scorer
from ._text import all_request_text, all_response_text, request_text
from ._words import check_language, content_words, stem_words
from .utils import round_to_two_decimals

__all__ = ["COMPLETENESS_SCORER_ID", "create_completeness_scorer", "key_elements"]

COMPLETENESS_SCORER_ID = "completeness-scorer"


def key_elements(text: str, language: str = "english") -> list[str]:
    """The distinct stems of `text`'s content words, in order of first appearance."""
    return list(dict.fromkeys(stem_words(content_words(text, language), language)))


def create_completeness_scorer(*, language: str = "english") -> Scorer:
    """Coverage of the input's key elements (content-word stems) in the output.

    Options: `language` (a `stop-words` / Snowball language name or code, default English).
    Range 0..1, higher is better, no judge call.
    """
    check_language(language)

    def extract(ctx: StepContext) -> dict[str, Any]:
        source = all_request_text(ctx.run.input) or request_text(ctx.run.input)
        answer = all_response_text(ctx.run.output)
        input_elements = key_elements(source, language)
        output_elements = key_elements(answer, language)
        present = set(output_elements)
        return {
            "input_elements": input_elements,
            "output_elements": output_elements,
            "missing_elements": [e for e in input_elements if e not in present],
            "element_counts": {"input": len(input_elements), "output": len(output_elements)},
        }

    def score(found: Any) -> float:
        wanted: list[str] = found["input_elements"]
        if not wanted:
            return 1.0 if not found["output_elements"] else 0.0
        covered = len(wanted) - len(found["missing_elements"])
        return round_to_two_decimals(covered / len(wanted))

    return measured_scorer(
        id=COMPLETENESS_SCORER_ID,
        name="Completeness Scorer",
        description="Measures how many of the input's key words (stems, stop words excluded) "
        "the output covers",
        measure=extract,
        score=score,
    )
