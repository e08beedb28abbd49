"""The shape of the model-free prebuilt scorers: a preprocess function measures the run (what it
returns is recorded as the preprocess result), and the score is read from that measurement.
Range 0..1, no judge call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Scorer, StepContext
from ._card import ScorerCard

__all__ = ["measured_scorer"]


def measured_scorer(
    card: ScorerCard,
    *,
    measure: Callable[[StepContext], Any],
    score: Callable[[Any], float | int],
    id: str | None = None,
    description: str | None = None,
) -> Scorer:
    """A model-free scorer: `measure(ctx)` in preprocess, then `score(measurement)`; `id` and
    `description` override the card's for a scorer configured otherwise."""
    return (
        card.create_scorer(id=id, description=description)
        .preprocess(measure)
        .generate_score(lambda ctx: score(ctx.results.preprocess_step_result))
    )
