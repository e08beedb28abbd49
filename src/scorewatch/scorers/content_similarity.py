"""The content-similarity scorer: how alike are the output and the reference, character-wise?

Model-free and deterministic. The similarity is RapidFuzz's normalized Indel similarity
(`rapidfuzz.fuzz.ratio`: 1 - insertions and deletions needed / total length), a fast C++
implementation of a standard edit-distance measure; the reference system uses a bigram Dice
coefficient, which ranks texts alike but differs in value. The reference is the run's
`ground_truth` when given, else the run input.

Score: similarity in 0..1, higher is better, rounded half up to two decimals, no judge call.
Two empty texts are identical (1); one empty text against a non-empty one gives 0.
Options: `ignore_case` (default True), `ignore_whitespace` (default True: runs of whitespace
count as one space and the ends are trimmed).
"""

from __future__ import annotations

import re
from typing import Any

from rapidfuzz import fuzz

from ..core import Scorer, StepContext
from ._measured import measured_scorer, rounded
from ._text import all_response_text, reference_text

__all__ = ["CONTENT_SIMILARITY_SCORER_ID", "create_content_similarity_scorer", "similarity"]

CONTENT_SIMILARITY_SCORER_ID = "content-similarity-scorer"
_SPACES = re.compile(r"\s+")


# Above this many character pairs a comparison takes milliseconds or more (it grows with the
# product of the lengths: two 100 KB texts take about 0.3 s).
_LARGE = 1 << 20


def similarity(first: str, second: str) -> float:
    """RapidFuzz's normalized Indel similarity of two texts, in 0..1.

    Large texts go through `process.cdist`, which computes the same value but releases the GIL
    while it does: scored in a worker thread, a long comparison then never holds up the event
    loop's thread (`fuzz.ratio` keeps the GIL throughout)."""
    if len(first) * len(second) <= _LARGE:
        return float(fuzz.ratio(first, second)) / 100
    import numpy
    from rapidfuzz import process

    matrix = process.cdist([first], [second], scorer=fuzz.ratio, dtype=numpy.float64, workers=1)
    return float(matrix[0][0]) / 100


def create_content_similarity_scorer(
    *, ignore_case: bool = True, ignore_whitespace: bool = True
) -> Scorer:
    """Normalized edit similarity between the output and the ground truth (or the input).

    Range 0..1, higher is better, no judge call.
    """

    def normalize(text: str) -> str:
        if ignore_case:
            text = text.casefold()
        if ignore_whitespace:
            text = _SPACES.sub(" ", text).strip()
        return text

    def compare(ctx: StepContext) -> dict[str, Any]:
        reference, source = reference_text(ctx.run.input, ctx.run.ground_truth)
        processed_reference = normalize(reference)
        processed_output = normalize(all_response_text(ctx.run.output))
        return {
            "reference_source": source,
            "processed_reference": processed_reference,
            "processed_output": processed_output,
            "similarity": similarity(processed_reference, processed_output),
        }

    return measured_scorer(
        id=CONTENT_SIMILARITY_SCORER_ID,
        name="Content Similarity Scorer",
        description="Measures the normalized edit similarity of the output to the ground "
        "truth (or the input)",
        measure=compare,
        score=rounded("similarity"),
    )
