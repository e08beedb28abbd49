"""The tone-consistency scorer: does the output keep one tone, or the tone it should have?

Model-free and deterministic. Sentiment comes from VADER (`vaderSentiment`), a lexicon-and-rules
sentiment analyzer tuned for short conversational text; its lexicon ships inside the package, so
nothing is downloaded and no model is loaded. Each text gets VADER's compound polarity in -1..1.

Two modes:

* with a reference (the `reference_tone` text, or the run input when `compare_with_input=True`):
  score = 1 - |output polarity - reference polarity| / 2;
* otherwise, stability across the output's sentences: score = 1 - the population standard
  deviation of the sentence polarities (one sentence is perfectly stable).

Score: 0..1, higher is better, rounded half up to two decimals, no judge call. An output with no
text scores 0: there is no tone to measure.
"""

from __future__ import annotations

import re
import statistics
from functools import cache
from typing import Any

from ..core import Scorer, StepContext
from ._measured import measured_scorer, rounded
from ._text import all_response_text, request_text

__all__ = ["TONE_SCORER_ID", "create_tone_consistency_scorer", "polarity"]

TONE_SCORER_ID = "tone-scorer"
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


@cache
def _analyzer() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def polarity(text: str) -> float:
    """VADER's compound polarity of `text`, in -1..1 (0 for neutral or empty text)."""
    if not text.strip():
        return 0.0
    return float(_analyzer().polarity_scores(text)["compound"])


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if re.search(r"[^\W_]", s)]


def create_tone_consistency_scorer(
    *, reference_tone: str | None = None, compare_with_input: bool = False
) -> Scorer:
    """Tone match with a reference text, or tone stability across the output's sentences.

    Options: `reference_tone` (a text whose tone the output should match),
    `compare_with_input` (match the tone of the user's message instead). Range 0..1, higher is
    better, no judge call.
    """
    if reference_tone is not None and compare_with_input:
        raise ValueError("give reference_tone or compare_with_input, not both")

    def measure(ctx: StepContext) -> dict[str, Any]:
        output = all_response_text(ctx.run.output)
        if not output.strip():
            return {"mode": "empty", "score": 0.0}
        reference = request_text(ctx.run.input) if compare_with_input else reference_tone
        if reference is not None:
            response_polarity, reference_polarity = polarity(output), polarity(reference)
            difference = abs(response_polarity - reference_polarity)
            return {
                "mode": "reference",
                "response_sentiment": response_polarity,
                "reference_sentiment": reference_polarity,
                "difference": difference,
                "score": max(0.0, 1 - difference / 2),
            }
        sentiments = [polarity(sentence) for sentence in _sentences(output)] or [0.0]
        spread = statistics.pstdev(sentiments)
        return {
            "mode": "stability",
            "sentence_sentiments": sentiments,
            "avg_sentiment": statistics.fmean(sentiments),
            "sentiment_spread": spread,
            "score": max(0.0, 1 - spread),
        }

    return measured_scorer(
        id=TONE_SCORER_ID,
        name="Tone Consistency Scorer",
        description="Measures whether the output's sentiment matches a reference tone, or "
        "stays steady across its sentences (VADER sentiment)",
        measure=measure,
        score=rounded("score"),
    )
