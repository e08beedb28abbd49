"""Bounds the distinct values of a metric attribute: past the limit, new values become `_other`."""

from __future__ import annotations

import threading

from .names import CARDINALITY_OVERFLOW, DEFAULT_CARDINALITY_LIMIT

__all__ = ["CardinalityGuard"]


class CardinalityGuard:
    """Admits the first `limit` distinct values it sees; every later new value maps to `_other`.

    Values already admitted keep their own series forever, so a dashboard line never jumps to
    `_other` once it exists.
    """

    __slots__ = ("_lock", "_seen", "limit")

    def __init__(self, limit: int = DEFAULT_CARDINALITY_LIMIT) -> None:
        if limit < 0:
            raise ValueError("the cardinality limit must be >= 0")
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        with self._lock:
            if value in self._seen:
                return value
            if len(self._seen) >= self.limit:
                return CARDINALITY_OVERFLOW
            self._seen.add(value)
            return value

    def __len__(self) -> int:
        return len(self._seen)
