"""Prebuilt scorers. Message-extraction helpers live in `scorewatch.scorers.utils`."""

from __future__ import annotations

from .summarization import create_summarization_scorer

__all__ = [
    "create_summarization_scorer",
]
