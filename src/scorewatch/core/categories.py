"""A scorer's categories (label -> score): checked once when the scorer is built, and read
back from stored scores when agreement compares a judge's categories with people's.

A stored run keeps the judge's score, not its label, so the judge's category is the one
whose score equals the stored score; that is why each score may name one category only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["category_of", "frozen_categories"]

_TOLERANCE = 1e-9


def frozen_categories(categories: Mapping[str, float]) -> Mapping[str, float]:
    """The categories read-only, scores as floats; ValueError names what is wrong."""
    table = dict(categories)
    if len(table) < 2:
        raise ValueError("needs at least two categories")
    if any(not isinstance(label, str) or not label.strip() for label in table):
        raise ValueError("category labels must be non-empty strings")
    if any(
        isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
        for v in table.values()
    ):
        raise ValueError("every category must map to a finite score")
    if len(set(map(float, table.values()))) < len(table):
        raise ValueError("two categories share a score: the judge's category could not be told")
    return MappingProxyType({label: float(value) for label, value in table.items()})


def category_of(score: float, categories: Mapping[str, float]) -> str:
    """The category whose score is `score` (to 1e-9, for scores that went through a store),
    or `score <n>` when none is: a score of another definition stays visible as its own
    column of the confusion matrix rather than being dropped."""
    for label, value in categories.items():
        if math.isclose(score, value, rel_tol=_TOLERANCE, abs_tol=_TOLERANCE):
            return label
    return f"score {score:g}"
