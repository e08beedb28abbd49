"""The keyword-coverage scorer: how many of the input's keywords appear in the output?

Model-free and deterministic, with the reference system's numbers. Keywords are extracted as
the `keyword-extractor` package does with the reference's options (English, digits removed,
lower-cased, duplicates removed): HTML tags are dropped, the text is split at each white-space
character, each word loses `. , ; ! ? ( ) : "` and curly quotes anywhere and a straight quote
at either end (URLs are kept whole), a lone `_ @ & #` is dropped, words made only of digits are
dropped, and the rest, lower-cased, are keywords unless they are on the SMART English stop
list (shipped in `scorers/data/keyword_stopwords_en.txt`). Accented words stay as written:
`Café` gives `café`, which `cafe` does not match.

The input is the run's input messages joined by `", "`, the output its output messages joined
the same way. The preprocess result lists `referenceKeywords` and `responseKeywords` (arrays;
the reference keeps JS Sets, which its JSON writes as `{}`); the analyze result counts
`totalKeywordsLength` and `matchedKeywordsLength`. With no input and no output text the
preprocess result is `{"result": {...}}`, as in the reference.

Option (not in the reference): `keywords`, fixed keywords or phrases to look for instead of the
input's; each counts when it appears in the lower-cased output as whole words.

Score: matched / total keywords, 0..1, higher is better, not rounded; 1 when there are no
keywords to look for (nothing is missing). No judge call. Linear time in the text length.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from ..core import Scorer, StepContext
from ._card import ScorerCard, prebuilt
from ._text import JS_SPACE, joined_input_text, joined_output_text, js_lower, js_number, js_trim

__all__ = ["KEYWORD_COVERAGE_SCORER_ID", "create_keyword_coverage_scorer", "extract_keywords"]

KEYWORD_COVERAGE_SCORER_ID = "keyword-coverage-scorer"

_CARD = ScorerCard(
    name="keyword-coverage",
    id=KEYWORD_COVERAGE_SCORER_ID,
    scorer_name="Keyword Coverage Scorer",
    description="Measures the share of the input's keywords that appear in the output",
)

_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
_PUNCTUATION = re.compile("[.,;!?():\"\u201c\u201d\u2018\u2019]|^'|'\\Z")
_LONE_SYMBOL = re.compile("[_@&#]")
_DIGIT = re.compile("[0-9]")
_WORD_CHAR = re.compile(r"[^\W_]+")


@cache
def stop_words() -> frozenset[str]:
    """The keyword extractor's English stop list."""
    text = resources.files(__package__).joinpath("data/keyword_stopwords_en.txt").read_text("utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def extract_keywords(text: str) -> list[str]:
    """The keywords of `text`, in order of first appearance, as the reference extracts them."""
    # No tag can start after the last ">": leaving that tail out keeps many "<" linear.
    end = text.rfind(">") + 1
    text = js_trim(_TAG.sub("", text[:end]) + text[end:])
    if not text:
        return []
    stopped = stop_words()
    found: dict[str, None] = {}
    for raw in JS_SPACE.split(text):
        is_url = _URL.search(raw) is not None
        word = raw if is_url else _PUNCTUATION.sub("", raw)
        if len(word) == 1:
            word = _LONE_SYMBOL.sub("", word)
        if word and len(_DIGIT.findall(word)) == len(word):
            continue
        if not word:
            continue
        lower = js_lower(word)
        if lower not in stopped:
            found.setdefault(word if is_url else lower)
    return list(found)


def _phrase_pattern(keyword: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in _WORD_CHAR.findall(js_lower(keyword))]
    return re.compile(r"(?<![^\W_])" + r"\W+".join(parts) + r"(?![^\W_])")


@prebuilt(_CARD)
def create_keyword_coverage_scorer(*, keywords: Sequence[str] | None = None) -> Scorer:
    """Share of the input's keywords (or of the fixed `keywords`) found in the output.

    Range 0..1, higher is better, no judge call.
    """
    fixed = None
    if keywords is not None:
        fixed = [k for k in dict.fromkeys(js_lower(k) for k in keywords) if _WORD_CHAR.search(k)]

    def extract(ctx: StepContext) -> dict[str, Any]:
        source = joined_input_text(ctx.run.input)
        answer = joined_output_text(ctx.run.output)
        if fixed is not None:
            lowered = js_lower(answer)
            present = [k for k in fixed if _phrase_pattern(k).search(lowered)]
            return {"referenceKeywords": fixed, "responseKeywords": present}
        if not source and not answer:
            return {"result": {"referenceKeywords": [], "responseKeywords": []}}
        return {
            "referenceKeywords": extract_keywords(source),
            "responseKeywords": extract_keywords(answer),
        }

    def count(ctx: StepContext) -> dict[str, int]:
        found = ctx.results.preprocess_step_result
        reference: list[str] = found.get("referenceKeywords") or []
        response = set(found.get("responseKeywords") or [])
        if not reference and not response:
            return {"totalKeywordsLength": 0, "matchedKeywordsLength": 0}
        matched = sum(1 for keyword in reference if keyword in response)
        return {"totalKeywordsLength": len(reference), "matchedKeywordsLength": matched}

    def score(ctx: StepContext) -> float:
        counts = ctx.results.analyze_step_result
        total: int = counts["totalKeywordsLength"]
        if not total:
            return 1
        return js_number(counts["matchedKeywordsLength"] / total)

    return _CARD.create_scorer().preprocess(extract).analyze(count).generate_score(score)
