"""The textual-difference scorer: how much of the reference text survives in the output?

Model-free and deterministic, built on the standard library's `difflib.SequenceMatcher` (the
Ratcliff/Obershelp matching the reference system ports to JavaScript): the score is its
`ratio()`, 2 * matched characters / total characters. The reference is the run's
`ground_truth` when given, else the run input. `autojunk` is off so long texts are not
judged on a sample of their characters.

Score: 0..1, higher means more alike, rounded half up to two decimals, no judge call. Two empty
texts give 1. The preprocess result also reports the number of edit operations (`changes`), the
relative length difference (`length_diff`) and `confidence` = 1 - length_diff.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

from ..core import Scorer, StepContext
from ._measured import measured_scorer, rounded
from ._text import all_response_text, reference_text

__all__ = ["TEXTUAL_DIFFERENCE_SCORER_ID", "create_textual_difference_scorer"]

TEXTUAL_DIFFERENCE_SCORER_ID = "textual-difference-scorer"


def create_textual_difference_scorer(*, ignore_case: bool = False) -> Scorer:
    """SequenceMatcher similarity between the output and the ground truth (or the input).

    Options: `ignore_case` (default False: a change of case is a change). Range 0..1, higher is
    better, no judge call.
    """

    def compare(ctx: StepContext) -> dict[str, Any]:
        reference, source = reference_text(ctx.run.input, ctx.run.ground_truth)
        output = all_response_text(ctx.run.output)
        if ignore_case:
            reference, output = reference.casefold(), output.casefold()
        matcher = SequenceMatcher(None, reference, output, autojunk=False)
        longest = max(len(reference), len(output))
        length_diff = abs(len(reference) - len(output)) / longest if longest else 0.0
        return {
            "reference_source": source,
            "ratio": matcher.ratio(),
            "changes": sum(1 for op in matcher.get_opcodes() if op[0] != "equal"),
            "length_diff": length_diff,
            "confidence": 1 - length_diff,
        }

    return measured_scorer(
        id=TEXTUAL_DIFFERENCE_SCORER_ID,
        name="Textual Difference Scorer",
        description="Measures how much of the ground truth (or the input) the output keeps, "
        "with difflib's sequence matching",
        measure=compare,
        score=rounded("ratio"),
    )
