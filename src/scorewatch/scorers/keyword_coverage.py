"""The keyword-coverage scorer: how many of the reference keywords appear in the output?

Model-free and deterministic. Keywords are the words of the reference text minus stop words and
numbers, lower-cased and de-duplicated (stop words from the `stop-words` package, shipped with it,
no download). The reference is the `keywords` option when given (each keyword, which may be a
phrase, must appear in the output as whole words, case-insensitively), else the run input.
Unlike completeness there is no stemming: a keyword counts only in the same form.

Score: matched keywords / keywords, 0..1, higher is better, rounded half up to two decimals, no
judge call. With no keywords to look for the score is 1 (nothing is missing; the reference
system's rule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..core import Scorer, StepContext
from ._measured import measured_scorer
from ._text import all_request_text, all_response_text, request_text
from ._words import check_language, content_words, fold, words
from .utils import round_to_two_decimals

__all__ = ["KEYWORD_COVERAGE_SCORER_ID", "create_keyword_coverage_scorer", "extract_keywords"]

KEYWORD_COVERAGE_SCORER_ID = "keyword-coverage-scorer"


def extract_keywords(text: str, language: str = "english") -> list[str]:
    """The distinct non-stop, non-numeric words of `text`, lower-cased, in order."""
    return list(dict.fromkeys(content_words(text, language, keep_digits=False)))


def _phrase_pattern(keyword: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in words(keyword)]
    return re.compile(r"(?<![^\W_])" + r"\W+".join(parts) + r"(?![^\W_])")


def create_keyword_coverage_scorer(
    *, keywords: Sequence[str] | None = None, language: str = "english"
) -> Scorer:
    """Share of the reference keywords found in the output.

    Options: `keywords` (fixed keywords or phrases to look for; default: extracted from the run
    input), `language` (stop-word list, default English). Range 0..1, higher is better, no judge
    call.
    """
    check_language(language)
    fixed = None if keywords is None else [k for k in dict.fromkeys(keywords) if words(k)]

    def extract(ctx: StepContext) -> dict[str, Any]:
        answer = all_response_text(ctx.run.output)
        if fixed is not None:
            folded = fold(answer)
            matched = [k for k in fixed if _phrase_pattern(k).search(folded)]
            return {"reference_keywords": fixed, "matched_keywords": matched}
        source = all_request_text(ctx.run.input) or request_text(ctx.run.input)
        reference = extract_keywords(source, language)
        present = set(extract_keywords(answer, language))
        return {
            "reference_keywords": reference,
            "response_keywords": sorted(present),
            "matched_keywords": [k for k in reference if k in present],
        }

    def score(found: Any) -> float:
        total = len(found["reference_keywords"])
        if total == 0:
            return 1.0
        return round_to_two_decimals(len(found["matched_keywords"]) / total)

    return measured_scorer(
        id=KEYWORD_COVERAGE_SCORER_ID,
        name="Keyword Coverage Scorer",
        description="Measures the share of the reference keywords that appear in the output",
        measure=extract,
        score=score,
    )
