"""`BoundedMemo`: what the sinks remember from one row to the next, up to a bound.

Rows repeat themselves: the same scorer's column, the same agent, the same span metadata, the
same few dozen keys. What a row's encoding works out from such a value is remembered under it
(`record._ONCE`, `record._CLEANED`), so the next row looks it up; the keys found storable
(`storable._STORABLE_KEYS`, a set: each key of each walked row is looked up) keep its bound.
Hostile input makes every value new: a memo that is full stops remembering rather than grow
(or evict, which would cost every row the churn), and what it holds already stays useful.
"""

from __future__ import annotations

from typing import Final, TypeVar

__all__ = ["MEMO_LIMIT", "BoundedMemo"]

MEMO_LIMIT: Final = 4096
"""How many values a sink's memo remembers at most (a few hundred kB of short texts)."""

_K = TypeVar("_K")
_V = TypeVar("_V")


class BoundedMemo(dict[_K, _V]):
    """A dict that keeps at most `limit` entries: `remember` adds one only while there is
    room. Looked up as a dict (`get`, `in`: C-level, as the rows' hot loops need)."""

    __slots__ = ("limit",)

    def __init__(self, limit: int = MEMO_LIMIT) -> None:
        super().__init__()
        self.limit = limit

    def remember(self, key: _K, value: _V) -> _V:
        """`value`, kept under `key` if the memo is not full."""
        if len(self) < self.limit:
            self[key] = value
        return value
