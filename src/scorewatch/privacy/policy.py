"""`PrivacyPolicy`: which personal data scorewatch redacts from what it keeps and exports, and
`Redaction`, one run's redactor.

The judge reads a run's content as it is; only what scorewatch keeps (score rows, span
attributes, evaluation events, answers, reports) passes through the run's `Redaction`, which
replaces every match with a typed marker, `<EMAIL_1>`, `<PHONE_2>`, `<CARD_1>`. A marker stands
for one value throughout its run: the row, the spans and the event of a run share one
`Redaction`, so `<EMAIL_1>` in the stored input and in the judge's reason is the same address.
Another run numbers afresh, so markers never link two runs' data.

>>> policy = PrivacyPolicy(redact=["email", "phone"])
>>> run = policy.start()
>>> run.text("Write to ada@example.com or call +44 20 7946 0958.")
'Write to <EMAIL_1> or call <PHONE_1>.'
>>> run.text("ADA@example.com asked twice")
'<EMAIL_1> asked twice'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cached_property
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .recognisers import KINDS, Kind, builtin_recognisers
from .scanner import Found, Scanner

__all__ = [
    "CURRENT_REDACTION",
    "PrivacyPolicy",
    "Redaction",
    "current_redaction",
    "holds_markers",
    "redacting",
]

_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
_MARKER: Final = re.compile(r"<[A-Za-z][A-Za-z0-9_]{0,39}_[1-9][0-9]*>")
"""What `Redaction._marker` writes: `<LABEL_n>`."""


def holds_markers(value: Any) -> bool:
    """Whether `value` (text, or JSON-like lists and mappings of it) holds a redaction marker:
    content kept under a privacy policy, no longer the original. Text that merely looks like a
    marker counts too; the caller can only say "may have been redacted"."""
    if isinstance(value, str):
        return _MARKER.search(value) is not None
    if isinstance(value, Mapping):
        return any(holds_markers(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(holds_markers(item) for item in value)
    return False


class PrivacyPolicy(BaseModel):
    """What to redact: built-in kinds (`email`, `phone`, `card`, `iban`, `ip`, `secret`, or
    `all`) and custom patterns, named by their marker label."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    redact: tuple[Kind, ...] = ()
    """Built-in kinds to redact; `["all"]` names every one."""
    patterns: dict[str, str] = Field(default_factory=dict)
    """Custom patterns: marker label (`EMPLOYEE_ID`) -> regular expression (Python syntax)."""
    phone_region: str | None = "US"
    """The region whose national numbering reads phone numbers written without `+` (ISO 3166
    alpha-2); None (or `""`) recognises international numbers only."""

    @field_validator("redact", mode="before")
    @classmethod
    def _all(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple) and "all" in value:
            return KINDS
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            if _NAME.fullmatch(name) is None:
                raise ValueError(
                    f"privacy pattern name {name!r}: a letter, then letters, digits or '_'"
                )
            if name.upper() in {r.label for r in builtin_recognisers(None).values()}:
                raise ValueError(f"privacy pattern name {name!r} is a built-in kind's marker")
            try:
                compiled = re.compile(pattern)
            except re.error as error:
                raise ValueError(f"privacy pattern {name!r} does not compile: {error}") from None
            if compiled.match(""):
                raise ValueError(f"privacy pattern {name!r} matches empty text")
        return value

    @field_validator("phone_region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if not value:
            return None
        import phonenumbers

        region = value.upper()
        if region not in phonenumbers.SUPPORTED_REGIONS:
            raise ValueError(f"phone_region {value!r} is not a region phonenumbers knows")
        return region

    @property
    def enabled(self) -> bool:
        """Whether anything is redacted at all."""
        return bool(self.redact or self.patterns)

    def start(self) -> Redaction:
        """A new run's redactor: markers numbered from 1."""
        return Redaction(self._scanner)

    @cached_property
    def _scanner(self) -> Scanner:
        return Scanner(self.redact, self.patterns, self.phone_region)


class Redaction:
    """One run's redactor: the same value gets the same marker everywhere in the run. Safe to
    use from several threads (sinks may build a row each).

    `text(value)`: `value` with every match replaced by its marker. It is the look-up of a
    dictionary, text -> its redacted form, which scans a text the first time it is looked up
    (`_Redacted`): a run's row repeats its texts (the prompt in the judge record, the reason in
    the judge's raw output), each is scanned once, and the texts `prepare` scanned (every text
    of a row) cost the dictionary's look-up only, no Python call."""

    __slots__ = ("_done", "text")

    text: Callable[[str], str]

    def __init__(self, scanner: Scanner) -> None:
        self._done = _Redacted(scanner)
        self.text = self._done.__getitem__

    @property
    def markers(self) -> Mapping[tuple[str, str], str]:
        """(label, normal form) -> marker, for the values replaced so far."""
        return dict(self._done.markers)

    def prepare(self, values: Iterable[str]) -> bool:
        """Scan `values` (distinct texts) together, in one pass rather than one per text (a row
        holds dozens), so that `text` of each is then a look-up. Whether any of them holds
        something to replace."""
        done = self._done
        changed = False
        if not done:  # the run's first batch (the common case: its row)
            new = values if isinstance(values, list) else list(values)
        else:
            new = []
            for value in values:
                known = done.get(value)
                if known is None:
                    new.append(value)
                elif known is not value:
                    changed = True
        if new:
            changed = done.scan(new) or changed
        return changed


class _Redacted(dict[str, str]):
    """A run's texts -> their redacted forms, and the run's markers; a text looked up before it
    was scanned is scanned then."""

    __slots__ = ("_lock", "_numbers", "markers", "scanner")

    def __init__(self, scanner: Scanner) -> None:
        super().__init__()
        self.scanner = scanner
        self.markers: dict[tuple[str, str], str] = {}  # (label, normal form) -> marker
        self._numbers: dict[str, int] = {}
        self._lock = threading.Lock()

    def __missing__(self, value: str) -> str:
        self.scan([value])
        return self[value]

    def scan(self, texts: list[str]) -> bool:
        """Scan `texts` (not scanned before in this run) and remember their redacted forms;
        whether any of them changed."""
        scanner = self.scanner
        joined, found = scanner.find(texts)
        self.update(zip(texts, texts, strict=True))
        if not found:
            return False
        changed = self._replace(texts, joined, found)
        if changed is None:  # overlapping candidates, or one across two texts (rare)
            changed = self._replace(texts, joined, scanner.resolve(texts, found))
            assert changed is not None  # resolved: none overlaps, none crosses
        return changed

    def _replace(self, texts: list[str], joined: str, found: Found) -> bool | None:
        """Remember each text's redacted form: `found` (candidates in `joined`, by start)
        replaced by their markers in one pass, which finds each one's text as it goes (walking
        on from the text of the one before: no table of where every text starts, which costs
        more than the pass for a row's ~50 texts); markers are numbered in that order, so by
        first appearance in the texts. Where two candidates overlap, or one crosses from one
        text into the next, nothing is done (no marker is numbered): None, and the caller
        resolves them first (`Scanner.resolve`). Whether any text changed.

        The pass holds the lock, so no other thread makes a marker meanwhile; the ones it
        makes are seen by others only once it is through."""
        short = self.scanner.short
        # The text's index, where it ends in `joined`.
        index, limit = 0, len(texts[0])
        # Where the text's next part starts; past its end in a text too short for any match,
        # which is left as it is.
        at = 0 if limit >= short else limit + 1
        parts: list[str] = []
        changed: list[tuple[int, list[str]]] = []  # (text's index, its parts)
        with self._lock:
            # The run's markers and the ones this pass makes (published when it is through),
            # and the labels' numbers after them.
            markers, numbers = self.markers.copy(), self._numbers.copy()
            for _, start, end, label, normal in found:
                if start > limit:  # in a later text
                    if parts:
                        parts.append(joined[at:limit])
                        changed.append((index, parts))
                        parts = []
                    while start > limit:  # the next text (after the line break between them)
                        index += 1
                        limit += len(texts[index]) + 1
                    size = len(texts[index])
                    at = limit - size if size >= short else limit + 1
                if end > limit or start < at:
                    if at > limit >= end:  # in a text too short
                        continue
                    return None
                parts.append(joined[at:start])
                key = (label, normal)
                parts.append(markers.get(key) or _new(key, markers, numbers))
                at = end
            self.markers, self._numbers = markers, numbers
        if parts:
            parts.append(joined[at:limit])
            changed.append((index, parts))
        for index, parts in changed:
            self[texts[index]] = "".join(parts)
        return bool(changed)


def _new(key: tuple[str, str], markers: dict[tuple[str, str], str], numbers: dict[str, int]) -> str:
    """A new marker for `key` (label, normal form) in `markers`: the label's next number in
    `numbers` (label -> its last). The caller holds the run's lock."""
    label = key[0]
    number = numbers[label] = numbers.get(label, 0) + 1
    marker = markers[key] = f"<{label}_{number}>"
    return marker


CURRENT_REDACTION: ContextVar[Redaction | None] = ContextVar("scorewatch_redaction", default=None)
"""The redactor of the run in progress (`redacting`); a hot reader gets it without a call."""


def current_redaction() -> Redaction | None:
    """The redactor of the run executing in this context (None: nothing is redacted)."""
    return CURRENT_REDACTION.get()


@contextmanager
def redacting(redaction: Redaction | None) -> Iterator[Redaction | None]:
    """Make `redaction` the current run's redactor while the block runs: the telemetry of a run
    started inside it redacts what it exports with the same markers as the run's row."""
    token = CURRENT_REDACTION.set(redaction)
    try:
        yield redaction
    finally:
        CURRENT_REDACTION.reset(token)
