"""`Decoded`: a text as it reads once its percent-encoded runs and escapes are decoded, with
where each of its characters is written in the text.

The scanner reads a text as written, and through `scanner.unescaped` (a view of the same
length) where it holds escapes. Two encodings take several characters for one, which a view of
the same length cannot show: a percent-encoded run (`ada%40example.com`, `%2B1%20415...` in a
URL's query or a `mailto:`), and a code-point escape of a digit or of an ASCII character
(`\\uff14\\uff11...`, full-width digits in `json.dumps` with `ensure_ascii`; `ada\\u0040x.co`).
`Decoded.of` reads such a text as it decodes (`urllib.parse.unquote`'s reading of `%XX` runs,
JSON's and `repr`'s of backslash escapes), and maps a match in the decoded text back to the
characters that wrote it, where its marker goes.
"""

from __future__ import annotations

import codecs
import re
from bisect import bisect_right
from collections.abc import Iterator
from typing import Final

from .recognisers import OTHER_FIGURES

__all__ = ["CONTROLS", "Decoded", "may_decode"]

# Runs of `%XX` (decoded together: a character beyond ASCII is several bytes of UTF-8), and the
# backslash escapes of JSON and `repr`: a surrogate pair (`json.dumps` writes a character beyond
# the BMP so), a code point, a control character's letter, a quote, a backslash pair.
_CODED: Final = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+"
    r"|\\(?:u[dD][89abAB][0-9A-Fa-f]{2}\\u[dD][c-fC-F][0-9A-Fa-f]{2}"
    r"|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|x[0-9A-Fa-f]{2}|[nrtfb\"'/\\])"
)
_PERCENT: Final = re.compile(r"%[0-9A-Fa-f]{2}")
_CODE_POINT: Final = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|x[0-9A-Fa-f]{2})")
_FIGURE: Final = re.compile(OTHER_FIGURES)
CONTROLS: Final = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "b": "\b"}
"""An escape's letter -> the control character it stands for (JSON's, `repr`'s)."""


def may_decode(text: str, escaped: bool) -> bool:
    """Whether `text` (`escaped`: it holds a backslash) reads differently decoded than the
    scanner's views read it: it holds a percent-encoded character, or a code-point escape of an
    ASCII character other than a space or control, or of a figure beyond ASCII (a digit of
    another script, a full-width separator). Escapes of letters, marks, spaces and controls read
    as they decode in `unescaped` already. Costs a `memchr` or two for a text holding neither
    `%` nor a backslash."""
    if "%" in text and _PERCENT.search(text) is not None:
        return True
    if not escaped:
        return False
    for escape in _matches(_CODE_POINT, text, "\\"):
        code = int(escape.group()[2:], 16)
        if 0x20 < code < 0x7F or (0x7F < code <= 0x10FFFF and _FIGURE.match(chr(code)) is not None):
            return True
    return False


class Decoded:
    """A text decoded (`text`), and where its characters are written: `start` and `end` map a
    span of `text` back to the span of the original that wrote it."""

    __slots__ = ("_at", "_written", "text")

    def __init__(self, text: str, at: list[int], written: list[tuple[int, int]]) -> None:
        self.text = text
        # Each decoded character that took other characters than itself to write: where it is
        # in `text`, and the span that wrote it. Between two of them, `text` is the original.
        self._at = at
        self._written = written

    @classmethod
    def of(cls, original: str) -> Decoded:
        """`original` decoded: each `%XX` run as `urllib.parse.unquote` decodes it (UTF-8,
        invalid bytes read as U+FFFD), each escape as JSON (`\\n`, `\\"`, `\\\\`, `\\u00e9`,
        a surrogate pair) or `repr` (`\\xNN`, `\\UXXXXXXXX`, `\\'`) decodes it; anything else
        (a lone `%`, `\\q`, an escape of a lone surrogate or beyond U+10FFFF) as written."""
        parts: list[str] = []
        at: list[int] = []
        written: list[tuple[int, int]] = []
        size = 0  # of `parts` joined
        done = 0  # where the original's next part starts
        for m in _matches(_CODED, original, "%\\"):
            start, end = m.span()
            if start > done:
                parts.append(original[done:start])
                size += start - done
            done = end
            token = m.group()
            if token[0] == "%":
                for character, low, high in _percent_run(token, start):
                    parts.append(character)
                    at.append(size)
                    written.append((low, high))
                    size += 1
                continue
            escaped = _escaped(token)
            if escaped is None:  # not one (a lone surrogate, beyond U+10FFFF): as written
                parts.append(token)
                size += len(token)
                continue
            parts.append(escaped)
            at.append(size)
            written.append((start, end))
            size += 1
        parts.append(original[done:])
        return cls("".join(parts), at, written)

    def start(self, position: int) -> int:
        """Where the character at `position` of `text` starts in the original."""
        index = bisect_right(self._at, position) - 1
        if index < 0:
            return position
        if self._at[index] == position:
            return self._written[index][0]
        return self._written[index][1] + position - self._at[index] - 1

    def end(self, position: int) -> int:
        """Where the character before `position` of `text` ends in the original."""
        index = bisect_right(self._at, position - 1) - 1
        if index < 0:
            return position
        if self._at[index] == position - 1:
            return self._written[index][1]
        return self._written[index][1] + position - self._at[index] - 1

    def position(self, original: int) -> int:
        """Where the original's character at `original` is in `text`, for one written as
        itself (not inside an escape or a percent-encoded run)."""
        index = bisect_right(self._written, (original, original)) - 1
        if index < 0:
            return original
        return self._at[index] + 1 + original - self._written[index][1]


def _matches(pattern: re.Pattern[str], text: str, firsts: str) -> Iterator[re.Match[str]]:
    """What `pattern.finditer(text)` finds, for a pattern whose every match starts with one of
    the characters `firsts`: matched only where `str.find` (`memchr`) finds one of them. The
    engine's own search tries every place of a text for these alternations (~400
    instructions a character: 837k for a 2 kB text holding one `%20`)."""
    nexts = {first: text.find(first) for first in firsts}
    at = 0
    while True:
        place = min((where for where in nexts.values() if where != -1), default=-1)
        if place == -1:
            return
        m = pattern.match(text, place)
        at = place + 1 if m is None else m.end()
        if m is not None:
            yield m
        for first, where in nexts.items():
            if where != -1 and where < at:
                nexts[first] = text.find(first, at)


def _escaped(token: str) -> str | None:
    kind = token[1]
    if kind in CONTROLS:
        return CONTROLS[kind]
    if kind in "uUx" and len(token) > 2:
        if len(token) == 12:  # a surrogate pair
            high, low = int(token[2:6], 16), int(token[8:12], 16)
            return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        code = int(token[2:], 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return None
        return chr(code)
    return kind  # `\\"`, `\\'`, `\\/`, `\\\\`


def _percent_run(run: str, at: int) -> list[tuple[str, int, int]]:
    """The characters a run of `%XX` at `at` decodes to, each with the span of the bytes that
    wrote it (the bytes of an invalid sequence: its U+FFFD)."""
    data = bytes.fromhex(run.replace("%", ""))
    if data.isascii():
        return [(chr(byte), at + 3 * i, at + 3 * i + 3) for i, byte in enumerate(data)]
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    characters = []
    first = 0  # the first byte not decoded yet
    for i in range(len(data) + 1):
        last = i == len(data)
        out = decoder.decode(data[i : i + 1], final=last)
        for character in out:
            characters.append((character, at + 3 * first, at + 3 * (i if last else i + 1)))
        if out:
            first = i if last else i + 1
    return characters
