"""The shape of the model-free prebuilt scorers: a preprocess function measures the run (what it
returns is recorded as the preprocess result), and the score is read from that measurement.
Range 0..1, higher is better, no judge call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Scorer, StepContext, create_scorer

__all__ = ["measured_scorer"]


def measured_scorer(
    *,
    id: str,
    name: str,
    description: str,
    measure: Callable[[StepContext], Any],
    score: Callable[[Any], float | int],
) -> Scorer:
    """A model-free scorer: `measure(ctx)` in preprocess, then `score(measurement)`."""
    return (
        create_scorer(
            id=id,
            name=name,
            description=description,
            type="agent",
            scale=1,
            direction="higher_is_better",
        )
        .preprocess(measure)
        .generate_score(lambda ctx: score(ctx.results.preprocess_step_result))
    )
