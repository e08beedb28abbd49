"""`Anchors`: where a text holds any of a set of short fixed-length anchors (a secret shape's
literal, `sk-`, `Bearer`; an IBAN's country code and check digits), found in one pass by
Hyperscan's compiled multi-pattern automaton (`hyperscan` on PyPI, the library bundled in its
wheels).

`re` looks for each literal in a pass of its own (~1-2 us per literal over 4 kB; one alternation
of them all costs far more), so a dozen secret shapes cost a dozen passes; Hyperscan finds them
all in one (~1 us). It only finds where a pattern may start: the pattern itself (look-arounds
included) is then matched by `re` at that place, so what matches is decided as before.

Hyperscan is optional at run time: `Anchors.compile` returns None when it does not import (a
platform without a wheel) or cannot run (a CPU without SSSE3), and the scanner then looks for
each pattern on its own, gated by the characters it needs (`Scanner`, `compiled=False`),
finding the same matches.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["Anchors"]


def _hit(anchor: int, start: int, end: int, flags: int, hits: list[tuple[int, int]]) -> None:
    hits.append((anchor, end))


class Anchors:
    """A compiled set of anchors, each a Hyperscan expression matching a fixed number of ASCII
    characters."""

    __slots__ = ("_database", "_hyperscan", "_lengths", "_local")

    def __init__(
        self, hyperscan: Any, expressions: Sequence[tuple[str, int]], caseless: int
    ) -> None:
        self._hyperscan = hyperscan
        self._lengths = tuple(length for _, length in expressions)
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=[expression.encode() for expression, _ in expressions],
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=[
                hyperscan.HS_FLAG_CASELESS if index >= caseless else 0
                for index in range(len(expressions))
            ],
        )
        self._database = database
        # A scan writes to its scratch space and releases the GIL: one per thread.
        self._local = threading.local()

    @classmethod
    def compile(
        cls, expressions: Sequence[tuple[str, int]], caseless: int | None = None
    ) -> Anchors | None:
        """The anchors (expression, its length in characters), the ones from index `caseless`
        on found in any (ASCII) case; None without Hyperscan, or where it cannot run (a CPU
        without the instructions it needs)."""
        try:
            import hyperscan
        except ImportError:
            return None
        start = len(expressions) if caseless is None else caseless
        try:
            anchors = cls(hyperscan, expressions, start)
            anchors.find("")  # allocates this thread's scratch space: the library runs here
        except hyperscan.error:
            return None
        return anchors

    def __copy__(self) -> Anchors:
        return self  # compiled once and never changed (a policy copied keeps its scanner)

    def __deepcopy__(self, memo: dict[int, Any]) -> Anchors:
        return self

    def find(self, text: str) -> list[tuple[int, int]]:
        """(anchor index, where it starts in `text`) of every occurrence, by where it ends."""
        data = text.encode("utf-8", "surrogatepass")
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hyperscan.Scratch(self._database)
        hits: list[tuple[int, int]] = []
        self._database.scan(data, match_event_handler=_hit, context=hits, scratch=scratch)
        if not hits:
            return hits
        lengths = self._lengths
        if len(data) == len(text):  # ASCII: a byte's offset is a character's
            return [(anchor, end - lengths[anchor]) for anchor, end in hits]
        # Every anchor ends with an ASCII character, so `end` falls between two characters.
        return [
            (anchor, len(data[:end].decode("utf-8", "surrogatepass")) - lengths[anchor])
            for anchor, end in hits
        ]
