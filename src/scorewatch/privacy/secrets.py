"""`Secrets`: where a text holds a secret's shape (`recognisers.SECRET_SHAPES`) or a value
assigned to a secret-looking name (`recognisers.SECRET_SHAPES_ANY_CASE`).

Two ways, finding the same matches (tests/privacy/test_scan_exact.py):
- with the anchors' hits (`privacy.anchors`, one Hyperscan pass): each pattern is matched where
  its anchor starts, as `finditer` would (the next match of a pattern starts after the end of
  its last); the names' spellings are found case-blind, which in ASCII text is reading the
  lower-cased text;
- without (no Hyperscan, or text that is not ASCII for the names): a shape is searched for only
  in a text holding every character of its gate (found by `in`, memchr), a name's pattern
  case-blind, only in a text holding part of the name where that reads the same (`_FOLDING`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Final

from .anchors import Anchor, Hit
from .recognisers import SECRET_SHAPES, SECRET_SHAPES_ANY_CASE

__all__ = ["ANCHORS", "NAME_ANCHORS", "Secrets"]

Found = list[tuple[int, int, int, str, str]]
"""(priority, start, end, marker label, normal form) of each candidate."""

ANCHORS: Final = tuple(Anchor(anchor, length) for _, (anchor, length), _ in SECRET_SHAPES)
"""The shapes' anchors, in their order."""
NAME_ANCHORS: Final = tuple(
    Anchor(spelling, len(spelling), caseless=True)
    for _, spellings, _ in SECRET_SHAPES_ANY_CASE
    for spelling in spellings
)
"""The names' spellings, found in any case."""
# The characters the shapes' gates name: which of them a text holds is found once.
_GATE_CHARACTERS: Final = "".join(sorted({c for gate, _, _ in SECRET_SHAPES for c in gate}))
_LABEL: Final = "SECRET"
# The only characters besides ASCII letters that an ASCII letter matches case-blind (`re`'s
# `IGNORECASE`): dotted capital I, dotless small i, long s, Kelvin sign.
_FOLDING: Final = "\u0130\u0131\u017f\u212a"


class Secrets:
    """The secret patterns, compiled once; candidates get `priority`."""

    __slots__ = ("_any_case", "_blind", "_folded", "_gated", "_priority", "_shapes")

    def __init__(self, priority: int) -> None:
        self._priority = priority
        self._gated = tuple((frozenset(gate), re.compile(p)) for gate, _, p in SECRET_SHAPES)
        self._shapes = tuple(pattern for _, pattern in self._gated)
        self._any_case = tuple((gate, re.compile(p)) for gate, _, p in SECRET_SHAPES_ANY_CASE)
        self._folded = tuple(re.compile(p, re.IGNORECASE) for _, _, p in SECRET_SHAPES_ANY_CASE)
        # Per name anchor: its pattern's index, the pattern read case-blind.
        self._blind = tuple(
            (index, re.compile(pattern, re.IGNORECASE))
            for index, (_, spellings, pattern) in enumerate(SECRET_SHAPES_ANY_CASE)
            for _ in spellings
        )

    def find(self, found: Found, text: str, hits: list[Hit] | None, names: int) -> None:
        """Append the candidates in `text` to `found`. `hits`: the anchors' (anchor, start, end)
        by anchor, the shapes' anchors numbered from 0 and the names' from `names` (None: no
        anchors)."""
        if hits is None:
            self._gated_in(found, text)
        elif hits:
            self._shapes_at(found, text, hits)
        if ":" not in text and "=" not in text:
            return  # a `name = value` needs one or the other
        if hits is not None and text.isascii():
            self._names_at(found, text, hits, names)
        else:
            self._names_in(found, text)

    def _gated_in(self, found: Found, text: str) -> None:
        present = frozenset(c for c in _GATE_CHARACTERS if c in text)
        priority = self._priority
        for gate, pattern in self._gated:
            if gate <= present:
                for m in pattern.finditer(text):
                    found.append((priority, m.start(), m.end(), _LABEL, m.group()))

    def _shapes_at(self, found: Found, text: str, hits: list[Hit]) -> None:
        shapes, priority = self._shapes, self._priority
        ends = [0] * len(shapes)
        for anchor, start, _ in hits:
            if anchor >= len(shapes):
                break  # the shapes' anchors come first
            if start >= ends[anchor]:
                m = shapes[anchor].match(text, start)
                if m is not None:
                    ends[anchor] = end = m.end()
                    found.append((priority, start, end, _LABEL, m.group()))

    def _names_at(self, found: Found, text: str, hits: list[Hit], names: int) -> None:
        blind, priority = self._blind, self._priority
        # The names' hits (hits come by anchor): most texts have none.
        named = hits[bisect_left(hits, (names,)) : bisect_left(hits, (names + len(blind),))]
        if not named:
            return
        ends = [0] * len(self._any_case)
        # By start: a pattern's spellings are anchors of their own.
        for start, anchor in sorted((s, a) for a, s, _ in named):
            index, pattern = blind[anchor - names]
            if start >= ends[index]:
                m = pattern.match(text, start)
                if m is not None:
                    ends[index] = m.end()
                    found.append((priority, start, m.end(), _LABEL, m.group()))

    def _names_in(self, found: Found, text: str) -> None:
        """The names' patterns read case-blind (`re.IGNORECASE`). In a text holding none of
        `_FOLDING`, that is reading its lower-cased form (the same length, its ASCII letters
        where the text's are, no other character an ASCII letter's case), where a name's gate
        (`in`) skips most patterns; in one holding any, the text itself is read. (Deciding by
        the length of the lower-cased text instead read `ſecret=...` as a secret only beside
        an `İ`, in the same text or in another of a batch.)"""
        priority = self._priority
        if any(character in text for character in _FOLDING):
            for pattern in self._folded:
                for m in pattern.finditer(text):
                    found.append((priority, m.start(), m.end(), _LABEL, m.group()))
            return
        lowered = text.lower()
        for name, pattern in self._any_case:
            if name in lowered:
                for m in pattern.finditer(lowered):
                    start, end = m.span()
                    found.append((priority, start, end, _LABEL, text[start:end]))
