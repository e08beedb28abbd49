"""`Scanner`: where a policy's recognisers match in one text.

Speed matters (every stored text passes through here), so a text is not scanned once per kind:
- addresses are looked for only around an `@` (`str.find`, not a regular expression);
- secrets and IBANs where their anchors are (`sk-`, `Bearer`, `api_key`, two capitals and two
  digits), all found in one Hyperscan pass (`privacy.anchors`, `privacy.secrets`);
- card, phone and IPv4 candidates only inside runs of digits and separators, found by one scan;
- IPv6 candidates only near a colon-framed hex group (`:db8:`) or a `::`.
Where matches overlap, the most specific kind wins (custom patterns first, then secret, email,
IBAN, card, IP, phone), and a text's matches come back in order.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, pairwise
from operator import itemgetter
from typing import Any, Final

from .anchors import Anchors
from .recognisers import (
    EMAIL_PATTERN,
    IBAN_ANCHOR,
    IBAN_LEAD,
    IBAN_PATTERN,
    IPV6_PATTERN,
    NUMBER_LEADS,
    NUMBER_RUN,
    NUMBER_SEPARATORS,
    Recogniser,
    builtin_recognisers,
)
from .secrets import ANCHORS, NAME_ANCHORS, Secrets

__all__ = ["Match", "Scanner"]

Match = tuple[int, int, str, str]
"""(start, end, marker label, the value's normal form)."""

_CUT: Final = re.compile(r"[ \t.\-()]+[^ \t.\-()]*$")
_MAX_CUTS: Final = 4
_DIGITS: Final = "0123456789"
_EMAIL_WINDOW: Final = (64, 256)  # characters before and after an `@` an address may span
_IPV6_HINT: Final = re.compile(r":[0-9A-Fa-f]{1,4}:|::")
# No built-in kind matches fewer characters (`a@b.co`, `1.2.3.4`).
_SHORTEST: Final = 6
# Between the texts of a batch scanned as one: no built-in pattern matches across a line break
# or reads one as part of a value (only a PEM block may span lines; see `Scanner.scan`).
_SEPARATOR: Final = "\n"
_PRIORITY: Final = {"secret": 0, "email": 1, "iban": 2, "card": 3, "ip": 4, "phone": 5}


_CACHE_SIZE: Final = 4096
_UNSEEN: Final = (-1, -1)  # not in a cache (where None is an outcome)


def _confirm(
    validate: Callable[[str], str | None],
    candidate: str,
    cache: dict[str, tuple[str, str] | None],
) -> tuple[str, str] | None:
    """(the text that passed, its normal form), cutting the candidate back at its separators
    while it fails. Outcomes are remembered in `cache` (a run's content repeats: the input is in
    the prompts too, the judge's reason quotes it, and parsing a phone number costs ~50 us)."""
    if candidate in cache:
        return cache[candidate]
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    outcome = cache[candidate] = _cut_until_valid(validate, candidate)
    return outcome


def _cut_until_valid(
    validate: Callable[[str], str | None], candidate: str
) -> tuple[str, str] | None:
    for _ in range(_MAX_CUTS + 1):
        normal = validate(candidate)
        if normal is not None:
            return candidate, normal
        shorter = _CUT.sub("", candidate)
        if not shorter or shorter == candidate:
            return None
        candidate = shorter
    return None


class Scanner:
    """The recognisers of one policy, compiled once."""

    __slots__ = (
        "_addresses",
        "_anchors",
        "_builtin",
        "_custom",
        "_email",
        "_iban",
        "_ipv6",
        "_names",
        "_numbers",
        "_numeric",
        "_runs",
        "_secrets",
        "_validated",
    )

    def __init__(
        self,
        kinds: tuple[str, ...],
        custom: dict[str, str],
        region: str | None,
        *,
        compiled: bool = True,
    ):
        """`compiled=False`: without the Hyperscan anchors (what happens when it does not
        import), each secret shape and the IBANs looked for on their own."""
        builtin = builtin_recognisers(region)
        self._builtin: dict[str, tuple[re.Pattern[str], Recogniser]] = {
            kind: (re.compile(r.pattern), r) for kind, r in builtin.items() if kind in kinds
        }
        self._custom = tuple((name.upper(), re.compile(p)) for name, p in custom.items())
        # Per kind: candidate text -> its normal form, or None (not one).
        self._validated: dict[str, dict[str, tuple[str, str] | None]] = {
            kind: {} for kind in self._builtin
        }
        # A number run (and the character before it) -> the values in it: what a run holds
        # depends on those only, and a run's content repeats (the input again in a prompt, a
        # customer's number in their every message).
        self._runs: dict[tuple[str, str], list[tuple[int, int, int, str, str]]] = {}
        # An address's window (and the character before it) -> where the address is in it.
        self._addresses: dict[tuple[str, str], tuple[int, int] | None] = {}
        self._secrets = Secrets(_PRIORITY["secret"]) if "secret" in kinds else None
        # The anchors: the secret shapes', the IBANs', the secret names' (found in any case).
        anchors = list(ANCHORS) if self._secrets is not None else []
        if "iban" in kinds:
            anchors.append(IBAN_ANCHOR)
        self._names = len(anchors)
        if self._secrets is not None:
            anchors.extend(NAME_ANCHORS)
        self._anchors = Anchors.compile(anchors, self._names) if compiled and anchors else None
        # IBANs and number runs are found by a digit: `regex` skips to one several times faster
        # than `re` does (its patterns read the same in both). Imported here, so that `import
        # scorewatch` pays nothing for it.
        import regex

        self._iban: Any = regex.compile(IBAN_PATTERN) if "iban" in kinds else None
        self._email = re.compile(EMAIL_PATTERN) if "email" in kinds else None
        self._ipv6 = re.compile(IPV6_PATTERN) if "ip" in kinds else None
        self._numeric = tuple(k for k in ("card", "ip", "phone") if k in kinds)
        self._numbers: Any = regex.compile(NUMBER_RUN) if self._numeric else None

    def forget(self) -> None:
        """Empty the caches (validated values, number runs, address windows): the outcomes
        stay the same, the first reading of each value costs its validation again."""
        for cache in self._validated.values():
            cache.clear()
        self._runs.clear()
        self._addresses.clear()

    def matches(self, text: str) -> list[Match]:
        """Where `text` holds data to redact: non-overlapping, in order."""
        if len(text) < _SHORTEST and not self._custom:
            return []
        found: list[tuple[int, int, int, str, str]] = []  # priority, start, end, label, normal
        self._custom_in(found, text)
        self._builtin_in(found, text)
        if not found:
            return []
        return _without_overlaps(found)

    def scan(self, texts: Sequence[str]) -> dict[int, list[Match]]:
        """`matches` of the texts that hold any, by index. The built-in kinds are read in one
        pass over the texts joined by line breaks (a pass costs per call as much as per
        character: a run's row holds dozens of texts, most of them short). A match that crosses
        from one text into the next (a PEM block) is dropped and those texts are read again on
        their own; custom patterns (which may use `^`, `$` or `\\s`) read each text on its
        own."""
        everything: list[tuple[int, int, int, str, str]] = []
        self._builtin_in(everything, _SEPARATOR.join(texts))
        found: dict[int, list[tuple[int, int, int, str, str]]] = {}
        again: set[int] = set()
        if everything:
            starts = list(accumulate((len(text) + 1 for text in texts[:-1]), initial=0))
            for priority, start, end, label, normal in everything:
                index = bisect_right(starts, start) - 1
                first = starts[index]
                if end > first + len(texts[index]):
                    again.update(range(index, bisect_right(starts, end - 1)))
                else:
                    found.setdefault(index, []).append(
                        (priority, start - first, end - first, label, normal)
                    )
        if self._custom:
            for index, text in enumerate(texts):
                if index not in again:
                    self._custom_in(found.setdefault(index, []), text)
        result: dict[int, list[Match]] = {}
        for index in again:
            result[index] = self.matches(texts[index])
        for index, own in found.items():
            if index in again:
                continue
            if len(texts[index]) < _SHORTEST and not self._custom:
                own = []  # as one text, a short one is not read
            if own:
                result[index] = _without_overlaps(own)
        return {index: matches for index, matches in result.items() if matches}

    def _custom_in(self, found: list[tuple[int, int, int, str, str]], text: str) -> None:
        for index, (label, pattern) in enumerate(self._custom):
            for m in pattern.finditer(text):
                if m.end() > m.start():
                    found.append((index - 100, m.start(), m.end(), label, m.group()))

    def _builtin_in(self, found: list[tuple[int, int, int, str, str]], text: str) -> None:
        hits = None if self._anchors is None else self._anchors.find(text)
        if self._secrets is not None:
            self._secrets.find(found, text, hits, self._names)
        if self._email is not None and "@" in text:
            self._emails(found, text)
        # IBANs, cards, phone numbers and IP addresses all hold digits (an IPv6 address may
        # not: `fe80::` is looked for regardless).
        digits = any(digit in text for digit in "0123456789")
        if self._iban is not None and hits is not None:
            if hits:
                self._ibans_at(found, text, hits)
        elif self._iban is not None and digits:
            self._find(found, "iban", text, 0, len(text), self._iban, lead=IBAN_LEAD)
        if self._numbers is not None and digits:
            self._numbers_in(found, text)
        if self._ipv6 is not None and ":" in text:
            hint = _IPV6_HINT.search(text)
            if hint is not None:
                self._find(found, "ip", text, max(0, hint.start() - 40), len(text), self._ipv6)

    def _find(
        self,
        found: list[tuple[int, int, int, str, str]],
        kind: str,
        text: str,
        start: int,
        end: int,
        pattern: Any = None,
        lead: int = 0,
    ) -> None:
        # `lead`: how many characters of the value come before where its pattern matches.
        compiled, _ = self._builtin[kind]
        self._confirmed(found, kind, text, (pattern or compiled).finditer(text, start, end), lead)

    def _confirmed(
        self,
        found: list[tuple[int, int, int, str, str]],
        kind: str,
        text: str,
        candidates: Iterable[Any],
        lead: int = 0,
    ) -> None:
        _, recogniser = self._builtin[kind]
        validate = recogniser.validate
        for m in candidates:
            if validate is None:
                continue
            at = m.start() - lead
            confirmed = _confirm(validate, text[at : m.end()], self._validated[kind])
            if confirmed is not None:
                matched, normal = confirmed
                found.append((_PRIORITY[kind], at, at + len(matched), recogniser.label, normal))

    def _emails(self, found: list[tuple[int, int, int, str, str]], text: str) -> None:
        assert self._email is not None
        before, after = _EMAIL_WINDOW
        done = 0  # where the last address ended: the next one starts after it
        at = text.find("@")
        search, seen = self._email.search, self._addresses
        while at != -1:
            # What the search finds depends on the window and the character before it only
            # (the look-behind's); a window repeats (the input's address again in a prompt).
            low = max(done, at - before)
            key = (text[low - 1 : low], text[low : at + after])
            span = seen.get(key, _UNSEEN)
            if span is _UNSEEN:
                if len(seen) >= _CACHE_SIZE:
                    seen.clear()
                m = search(text, low, at + after)
                span = seen[key] = None if m is None else (m.start() - low, m.end() - low)
            if span is not None and span[0] <= at - low < span[1]:
                start, end = low + span[0], low + span[1]
                found.append((_PRIORITY["email"], start, end, "EMAIL", text[start:end].lower()))
                done = end
                at = text.find("@", done)
            else:
                at = text.find("@", at + 1)

    def _ibans_at(
        self, found: list[tuple[int, int, int, str, str]], text: str, hits: list[tuple[int, int]]
    ) -> None:
        # What `finditer` finds (the pattern starts at the check digits, `IBAN_LEAD` in).
        iban, anchor = self._iban, self._names - 1
        candidates = []
        end = 0
        for which, start in hits:
            if which == anchor and start + IBAN_LEAD >= end:
                m = iban.match(text, start + IBAN_LEAD)
                if m is not None:
                    candidates.append(m)
                    end = m.end()
        self._confirmed(found, "iban", text, candidates, lead=IBAN_LEAD)

    def _numbers_in(self, found: list[tuple[int, int, int, str, str]], text: str) -> None:
        assert self._numbers is not None
        # A run whose digits lie inside a value found already (an IBAN's digits, a secret) is
        # not looked at (every card, phone or IP address in it ends with a digit, so it would
        # overlap that value and be dropped): the values found so far by start, and the
        # furthest end among those starting no later.
        taken = sorted((start, end) for _, start, end, _, _ in found)
        starts = [start for start, _ in taken]
        reach = list(accumulate((end for _, end in taken), max))
        seen = self._runs  # a run's values depend on it and the character before it only
        for run in self._numbers.finditer(text):
            start, end = run.span()
            # The run begins at its first digit; one written `+44 ...` or `(415) ...` begins at
            # the first `+` or `(` of the separators just before it.
            lead = start
            while lead > 0 and text[lead - 1] in NUMBER_SEPARATORS:
                lead -= 1
            while lead < start and text[lead] not in NUMBER_LEADS:
                lead += 1
            start = lead
            before = bisect_right(starts, start) - 1
            if before >= 0:
                last = end  # the run's last digit's end (a run may end with separators)
                while text[last - 1] in NUMBER_SEPARATORS:
                    last -= 1
                if reach[before] >= last:
                    continue
            key = (text[start - 1 : start], text[start:end])
            known = seen.get(key)
            if known is None and len(seen) >= _CACHE_SIZE:
                seen.clear()
            if known is None:
                known = seen[key] = self._run_values(text, start, end)
            found.extend((p, start + s, start + e, kind, value) for p, s, e, kind, value in known)

    def _run_values(self, text: str, start: int, end: int) -> list[tuple[int, int, int, str, str]]:
        """The cards, IPv4 addresses and phone numbers in the run at `start:end`, placed
        relative to its start."""
        kinds = self._numeric
        chunk = text[start:end]
        digits = sum(map(chunk.count, _DIGITS))
        values: list[tuple[int, int, int, str, str]] = []
        if "card" in kinds and digits >= 13:
            self._find(values, "card", text, start, end)
        if "ip" in kinds and digits >= 4 and chunk.count(".") >= 3:
            self._find(values, "ip", text, start, end)
        if "phone" in kinds and digits >= 7 and not values:
            # A run that held a card or an address is not also read as a phone number.
            self._find(values, "phone", text, start, end)
        return [(p, s - start, e - start, label, normal) for p, s, e, label, normal in values]


def _without_overlaps(found: list[tuple[int, int, int, str, str]]) -> list[Match]:
    """The matches kept, most specific kind first, then leftmost, longest: in text order."""
    by_start = sorted(found, key=itemgetter(1))
    if all(a[2] <= b[1] for a, b in pairwise(by_start)):  # none overlaps: all are kept
        return [(start, end, label, normal) for _, start, end, label, normal in by_start]
    found.sort()
    kept: list[Match] = []  # in text order, none overlapping
    for _, start, end, label, normal in found:
        at = bisect_right(kept, (start,))  # the first kept that starts at `start` or later
        if at > 0 and kept[at - 1][1] > start:
            continue  # the one before reaches into this
        if at < len(kept) and kept[at][0] < end:
            continue  # this reaches into the next
        kept.insert(at, (start, end, label, normal))
    return kept
