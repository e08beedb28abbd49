"""Words of a text for the model-free scorers: tokens, stop words, stems.

Libraries, not hand-rolled lists: stop words come from `stop-words` (lists for 30+ languages
shipped inside the package, no download, no dependencies) and stems from `snowballstemmer` (the
Snowball project's stemmers, pure Python, 30+ languages). Both load from the installed package,
never from the network.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import cache, lru_cache
from typing import Any

__all__ = [
    "check_language",
    "content_words",
    "fold",
    "pieces",
    "stem_words",
    "stop_words",
    "words",
]

# Runs of letters or digits; an apostrophe inside a word keeps "don't" whole for the stop list.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def fold(text: str) -> str:
    """Lower-case and strip diacritics (`Café` -> `cafe`), so accents do not split matches."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def words(text: str) -> list[str]:
    """The folded words of `text`, in order, repeats kept."""
    found: list[str] = []
    for piece in pieces(text):
        found.extend(_WORD.findall(fold(piece.replace("\u2019", "'"))))
    return found


# A C-level string operation keeps the GIL until it returns: on a megabyte it would hold up
# every other thread (the event loop, when scoring runs in a worker thread) for a tenth of a
# second, on 16 KiB for well under a millisecond.
_PIECE = 16384


def pieces(text: str, size: int = _PIECE) -> list[str]:
    """`text` cut into pieces of about `size` characters, each ending just after a space, so
    no word (and no letter with its accents) is split."""
    if len(text) <= size:
        return [text]
    cut: list[str] = []
    start = 0
    while len(text) - start > size:
        end = start + size
        space = text.rfind(" ", start + size // 2, end)
        if space < 0:  # no space near: the next one, wherever it is (never inside a word)
            space = text.find(" ", end)
            if space < 0:
                break
        end = space + 1
        cut.append(text[start:end])
        start = end
    cut.append(text[start:])
    return cut


@cache
def stop_words(language: str) -> frozenset[str]:
    """The stop-word list of `language` (`"english"` or `"en"`), folded."""
    from stop_words import get_stop_words

    return frozenset(fold(word) for word in get_stop_words(language))


_local = threading.local()


def _stemmer(language: str) -> Any:
    # One per thread: a Snowball stemmer keeps the word being stemmed in its own fields, so
    # two threads sharing one (scoring off the event loop) would corrupt each other's stems.
    stemmers: dict[str, Any] | None = getattr(_local, "stemmers", None)
    if stemmers is None:
        stemmers = _local.stemmers = {}
    stemmer = stemmers.get(language)
    if stemmer is None:
        import snowballstemmer

        stemmer = stemmers[language] = snowballstemmer.stemmer(language)
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str, language: str) -> str:
    # The Snowball stemmers are pure Python; live traffic repeats words, so stems are cached.
    stem: str = _stemmer(language).stemWord(word)
    return stem


def stem_words(tokens: list[str], language: str) -> list[str]:
    name = _snowball_name(language)
    return [_stem(token, name) for token in tokens]


def content_words(text: str, language: str, *, keep_digits: bool = True) -> list[str]:
    """Words of `text` without stop words (and without numbers unless `keep_digits`)."""
    stopped = stop_words(language)
    return [
        word for word in words(text) if word not in stopped and (keep_digits or not word.isdigit())
    ]


def _snowball_name(language: str) -> str:
    from stop_words import LANGUAGE_MAPPING

    mapping: dict[str, str] = LANGUAGE_MAPPING
    return mapping.get(language, language)


def check_language(language: str) -> str:
    """`language` if both libraries know it, else ValueError naming the problem."""
    import snowballstemmer
    from stop_words import StopWordError

    try:
        stop_words(language)
    except StopWordError:
        raise ValueError(f"no stop-word list for language {language!r}") from None
    if _snowball_name(language) not in snowballstemmer.algorithms():
        raise ValueError(f"no Snowball stemmer for language {language!r}")
    return language
