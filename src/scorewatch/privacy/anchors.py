"""`Anchors`: where a text holds any of a set of anchors (a secret shape's literal, `sk-`,
`Bearer`; an IBAN's country code and check digits; a run of digits and separators; an IPv6
address's colon-framed group), found in one pass by Hyperscan's compiled multi-pattern automaton
(`hyperscan` on PyPI, the library bundled in its wheels).

`re` looks for each literal in a pass of its own (~1-2 us per literal over 4 kB; one alternation
of them all costs far more), so a dozen secret shapes cost a dozen passes, and the digit runs
and the IPv6 hint two more; Hyperscan finds them all in one (~5 us). It only finds where a
pattern may be: the pattern itself (look-arounds included) is then matched by `re` at that
place, so what matches is decided as before.

An anchor is either of a fixed number of characters (its start is its end minus that), or found
with its leftmost start (`HS_FLAG_SOM_LEFTMOST`), then possibly followed by characters that end
it and are not part of it (`trim`: a run is reported once, where the character after it ends
it). The text is scanned followed by a line break, so that the end of a text ends a run too; no
anchor holds a line break.

Hyperscan is optional at run time: `Anchors.compile` returns None when it does not import (a
platform without a wheel) or cannot run (a CPU without SSSE3), and the scanner then looks for
each pattern on its own, gated by the characters it needs (`Scanner`, `compiled=False`),
finding the same matches.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["Anchor", "Anchors"]

Hit = tuple[int, int, int]
"""(anchor index, start, end) in characters."""


class Anchor(NamedTuple):
    """A Hyperscan expression (ASCII); `length`: its fixed number of characters, or 0 where
    its start is found (leftmost); `trim`: characters at its end that are not part of it;
    `caseless`: found in any (ASCII) case."""

    expression: str
    length: int = 0
    trim: int = 0
    caseless: bool = False


class Anchors:
    """A compiled set of anchors."""

    __slots__ = ("_database", "_hit", "_hyperscan", "_local")

    def __init__(self, hyperscan: Any, anchors: Sequence[Anchor]) -> None:
        self._hyperscan = hyperscan
        shape = tuple((anchor.length, anchor.trim) for anchor in anchors)

        # Each hit is placed as it is reported (one Python call per hit, no second pass).
        def hit(anchor: int, start: int, end: int, flags: int, hits: list[Hit]) -> None:
            length, trim = shape[anchor]
            hits.append((anchor, end - length if length else start, end - trim))

        self._hit = hit
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=[anchor.expression.encode() for anchor in anchors],
            ids=list(range(len(anchors))),
            elements=len(anchors),
            flags=[
                (hyperscan.HS_FLAG_CASELESS if anchor.caseless else 0)
                | (0 if anchor.length else hyperscan.HS_FLAG_SOM_LEFTMOST)
                for anchor in anchors
            ],
        )
        self._database = database
        # A scan writes to its scratch space and releases the GIL: one per thread.
        self._local = threading.local()

    @classmethod
    def compile(cls, anchors: Sequence[Anchor]) -> Anchors | None:
        """The anchors compiled; None without Hyperscan, or where it cannot run (a CPU without
        the instructions it needs)."""
        try:
            import hyperscan
        except ImportError:
            return None
        try:
            compiled = cls(hyperscan, anchors)
            compiled.find("")  # allocates this thread's scratch space: the library runs here
        except hyperscan.error:
            return None
        return compiled

    def __copy__(self) -> Anchors:
        return self  # compiled once and never changed (a policy copied keeps its scanner)

    def __deepcopy__(self, memo: dict[int, Any]) -> Anchors:
        return self

    def find(self, text: str) -> list[Hit]:
        """(anchor index, start, end) of every occurrence in `text`, by anchor, then start."""
        data = (text + "\n").encode("utf-8", "surrogatepass")
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hyperscan.Scratch(self._database)
        hits: list[Hit] = []
        self._database.scan(data, match_event_handler=self._hit, context=hits, scratch=scratch)
        if not hits:
            return hits
        if len(data) != len(text) + 1:  # not ASCII: byte offsets to characters
            hits = _in_characters(data, hits)
        hits.sort()
        return hits


def _in_characters(data: bytes, hits: list[Hit]) -> list[Hit]:
    # Every anchor starts and ends (trimmed) with an ASCII character, so each offset falls
    # between two characters: the characters before it are counted once, in order.
    characters: dict[int, int] = {}
    done = count = 0
    for offset in sorted({offset for _, start, end in hits for offset in (start, end)}):
        count += len(data[done:offset].decode("utf-8", "surrogatepass"))
        characters[offset] = count
        done = offset
    return [(anchor, characters[start], characters[end]) for anchor, start, end in hits]
