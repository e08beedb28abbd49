"""`Scanner`: where a policy's recognisers match in one text.

Speed matters (every stored text passes through here), so a text is not scanned once per kind:
- addresses are looked for only around an `@` (`str.find`, not a regular expression);
- secrets and IBANs where their anchors are (`sk-`, `Bearer`, `api_key`, two capitals and two
  digits), card, phone and IPv4 candidates only inside runs of digits and separators, IPv6
  candidates only near a colon-framed hex group (`:db8:`) or a `::`: all of these found in one
  Hyperscan pass (`privacy.anchors`, `privacy.secrets`), or without it by a scan each.
Where matches overlap, the most specific kind wins (custom patterns first, then secret, email,
IBAN, card, IP, phone), and a text's matches come back in order. A batch's candidates come back
by start in its texts joined, to be replaced in one pass (`privacy.policy`). A text holding a
backslash is read through `unescaped` (JSON or a `repr` written into a prompt: `\\n4111 ...`
reads as a card after a line break); one holding none is read as it is.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, pairwise, repeat
from operator import add, itemgetter
from typing import Any, ClassVar, Final
from unicodedata import category, decimal, normalize

from .anchors import Anchor, Anchors, Hit
from .decoded import CONTROLS, Decoded, may_decode
from .recognisers import (
    EMAIL_LOCAL,
    IBAN_ANCHOR,
    IBAN_LEAD,
    IBAN_PATTERN,
    IPV6_HINT,
    IPV6_PATTERN,
    NUMBER_LEADS,
    NUMBER_RUN,
    NUMBER_RUN_ANCHOR,
    NUMBER_SEPARATORS,
    OTHER_FIGURES,
    Recogniser,
    builtin_recognisers,
)
from .secrets import ANCHORS, NAME_ANCHORS, Secrets

__all__ = ["Found", "Match", "Scanner", "figured", "spaced", "unescaped"]

Match = tuple[int, int, str, str]
"""(start, end, marker label, the value's normal form)."""
Found = list[tuple[int, int, int, str, str]]
"""(priority, start, end, marker label, normal form) of each candidate."""

_CUT: Final = re.compile(r"[ \t.\-()]+[^ \t.\-()]*$")
_MAX_CUTS: Final = 4
_DIGITS: Final = "0123456789"
_EMAIL_WINDOW: Final = (64, 256)  # characters before and after an `@` an address may span
_IPV6_HINT: Final = re.compile(IPV6_HINT)
# No built-in kind matches fewer characters (`a@b.co`, `1.2.3.4`).
_SHORTEST: Final = 6
# A card has 13 digits at least (`recognisers._card`): a candidate cut back to fewer
# characters is not one.
_SHORTEST_CARD: Final = 13
_WHOLE_PHONE: Final = "phone, not cut back"  # `Scanner._phones`' second cache
# Between the texts of a batch scanned as one: no built-in pattern matches across a line break
# or reads one as part of a value (only a PEM block may span lines; see `Scanner.scan`).
_SEPARATOR: Final = "\n"
_PRIORITY: Final = {"secret": 0, "email": 1, "iban": 2, "card": 3, "ip": 4, "phone": 5}
_EMAIL: Final = _PRIORITY["email"]


_CACHE_SIZE: Final = 4096
_UNSEEN: Final[Any] = object()  # not in a cache (where None is an outcome)


def _confirm(
    validate: Callable[[str], str | None],
    candidate: str,
    cache: dict[str, tuple[str, str] | None],
    shortest: int = 0,
    cuts: int = _MAX_CUTS,
) -> tuple[str, str] | None:
    """(the text that passed, its normal form), cutting the candidate back at its separators
    while it fails (up to `cuts` times). Outcomes are remembered in `cache` (a run's content
    repeats: the input is in the prompts too, the judge's reason quotes it, and parsing a phone
    number costs ~50 us)."""
    if candidate in cache:
        return cache[candidate]
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    outcome = cache[candidate] = _cut_until_valid(validate, candidate, shortest, cuts)
    return outcome


def _known(
    validate: Callable[[str], str | None] | None,
    candidate: str,
    cache: dict[str, tuple[str, str] | None],
    shortest: int = 0,
    cuts: int = _MAX_CUTS,
) -> tuple[str, str] | None:
    """`_confirm`, looked up in `cache` first (most candidates are)."""
    confirmed = cache.get(candidate, _UNSEEN)
    if confirmed is _UNSEEN:
        confirmed = (
            None if validate is None else _confirm(validate, candidate, cache, shortest, cuts)
        )
    return confirmed  # type: ignore[no-any-return]


def _cut_until_valid(
    validate: Callable[[str], str | None],
    candidate: str,
    shortest: int = 0,
    cuts: int = _MAX_CUTS,
) -> tuple[str, str] | None:
    """`shortest`: no value of the kind has fewer characters (it is not cut back below)."""
    for _ in range(cuts + 1):
        if len(candidate) < shortest:
            return None
        normal = validate(candidate)
        if normal is not None:
            return candidate, normal
        shorter = _CUT.sub("", candidate)
        if not shorter or shorter == candidate:
            return None
        candidate = shorter
    return None


# A JSON or `repr` escape: a backslash pair (`\\\\`, skipped whole, so that what follows it is
# not read as an escape), a control character's letter, or a code point in hex; a backslash
# before anything else (the separator between two texts too) is left as it is.
_ESCAPE: Final = re.compile(r"\\(?:[nrtfb]|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[\s\S])")


def _view_of(escape: re.Match[str]) -> str:
    written = escape.group()
    kind = written[1]
    if kind in CONTROLS:
        character = CONTROLS[kind]
    elif kind in "xuU" and len(written) > 2:
        code = int(written[2:], 16)
        if code > 0x10FFFF:
            return written
        character = chr(code)
    else:
        return written  # `\\`, `\"`, or a backslash before anything else
    # What it stands for, last: the character before a value after it is the one the decoded
    # text has there. Before it, spaces if it is a space too (a value before it ends there, as
    # in the decoded text, not at a backslash); the character again if it is a letter, digit or
    # mark beyond ASCII (an address's `ex\u00e4mple.de` reads as one label, and a value that
    # holds it is replaced from its backslash on); else the escape as written (a `name = value`
    # secret's value reads on across `\u20ac`, as it does across `€`).
    if character.isspace():
        filler = " " * (len(written) - 1)
    elif not character.isascii() and (character.isalnum() or category(character)[0] == "M"):
        filler = character * (len(written) - 1)
    else:
        filler = written[:-1]
    return filler + character


# The space separators other than ASCII's (Unicode's `Zs`: a no-break space, the thin and
# narrow spaces numbers are grouped with, the ideographic space).
_SPACES: Final = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")


def spaced(text: str) -> str:
    """`text` with each Unicode space separator read as an ASCII space (the same length): a
    number grouped with no-break or thin spaces (`+33\u00a06\u00a012...`) is one run, and
    `Bearer\u00a0token` a bearer token, as with spaces. An ASCII text holds none."""
    if text.isascii() or _SPACES.search(text) is None:
        return text
    return _SPACES.sub(" ", text)


_OTHER_FIGURES: Final = re.compile(OTHER_FIGURES)


def _ascii_figure(m: re.Match[str]) -> str:
    character = m.group()
    if character.isdecimal():
        return str(decimal(character))
    return normalize("NFKC", character)  # a full-width form: its ASCII character


def figured(text: str) -> str:
    """`text` with each digit of another script read as its ASCII digit, and each full-width
    separator as its ASCII one (one character for one, as NFKC reads the full-width forms):
    `４１５-５５５-０１３２` reads as `415-555-0132`, found where it is written. An ASCII text
    holds none."""
    if text.isascii() or _OTHER_FIGURES.search(text) is None:
        return text
    return _OTHER_FIGURES.sub(_ascii_figure, text)


def unescaped(text: str) -> str:
    """`text` with each JSON or `repr` escape it holds (`\\n`, `\\t`, `\\u00e9`, `\\x0c`)
    replaced by the character it stands for, after characters that keep the length: a value
    after an escape is read as in the decoded text (`\\n4111 1111 1111 1111` as a card after a
    line break), at the place it has in `text`."""
    return _ESCAPE.sub(_view_of, text)


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
        "_local",
        "_names",
        "_numbers",
        "_numeric",
        "_runs",
        "_secrets",
        "_validated",
        "_where",
    )

    PHONE_TRIES: ClassVar[int] = 24
    """How many candidates that are not a phone number one run of figures may try (`_phones`)."""
    PHONE_INNER_TRIES: ClassVar[int] = 2
    """How many of those may start inside one candidate that is not a phone number."""

    def __init__(
        self,
        kinds: tuple[str, ...],
        custom: dict[str, str],
        region: str | None,
        *,
        compiled: bool = True,
    ):
        """`compiled=False`: without the Hyperscan anchors (what happens when it does not
        import), each secret shape, the IBANs, the number runs and the IPv6 hint looked for on
        their own."""
        # Without the anchors, IBANs and number runs are found by a digit: `regex` skips to one
        # several times faster than `re` does (its patterns read the same in both); addresses
        # are read by it (`\p{L}`: a letter of any script). Imported here, so that
        # `import scorewatch` pays nothing for it.
        import regex

        builtin = builtin_recognisers(region)
        self._builtin: dict[str, tuple[Any, Recogniser]] = {
            kind: ((regex if kind == "email" else re).compile(r.pattern), r)
            for kind, r in builtin.items()
            if kind in kinds
        }
        self._custom = tuple((name.upper(), re.compile(p)) for name, p in custom.items())
        # Per kind: candidate text -> its normal form, or None (not one).
        self._validated: dict[str, dict[str, tuple[str, str] | None]] = {
            kind: {} for kind in self._builtin
        }
        if "phone" in kinds:
            self._validated[_WHOLE_PHONE] = {}
        # A number run (and the character before it) -> the values in it: what a run holds
        # depends on those only, and a run's content repeats (the input again in a prompt, a
        # customer's number in their every message).
        self._runs: dict[str, list[tuple[int, int, int, str, str]]] = {}
        # An address's window and the character before it -> where the address is in it, its
        # normal form.
        self._addresses: dict[tuple[int, str], tuple[int, int, str] | None] = {}
        self._secrets = Secrets(_PRIORITY["secret"]) if "secret" in kinds else None
        self._numeric = tuple(k for k in ("card", "ip", "phone") if k in kinds)
        # The anchors: the secret shapes', the IBANs', the secret names' (found in any case),
        # the number runs', the IPv6 hint's; `_where`: the index of each group's first.
        anchors = list(ANCHORS) if self._secrets is not None else []
        where = {"iban": len(anchors)}
        if "iban" in kinds:
            anchors.append(Anchor(*IBAN_ANCHOR))
        self._names = len(anchors)
        if self._secrets is not None:
            anchors.extend(NAME_ANCHORS)
        where["run"] = len(anchors)
        if self._numeric:
            anchors.append(Anchor(NUMBER_RUN_ANCHOR, trim=1))
        where["ipv6"] = len(anchors)
        if "ip" in kinds:
            anchors.append(Anchor(IPV6_HINT))
        self._where = where
        self._anchors = Anchors.compile(anchors) if compiled and anchors else None
        self._iban: Any = regex.compile(IBAN_PATTERN) if "iban" in kinds else None
        self._email: Any = self._builtin["email"][0] if "email" in kinds else None
        self._local: Any = regex.compile(EMAIL_LOCAL, regex.REVERSE) if "email" in kinds else None
        self._ipv6 = re.compile(IPV6_PATTERN) if "ip" in kinds else None
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
        return [(start, end, label, normal) for _, start, end, label, normal in self.scan([text])]

    def scan(self, texts: Sequence[str]) -> Found:
        """The matches of the texts joined by line breaks (`find`), none overlapping and none
        across two texts (`resolve`), by start."""
        if not texts:
            return []
        _, found = self.find(texts)
        return self.resolve(texts, found)

    def find(self, texts: Sequence[str]) -> tuple[str, Found]:
        """The texts joined by line breaks, and the candidates in it, by start. The built-in
        kinds are read in one pass over the joined texts (a pass costs per call as much as per
        character: a run's row holds dozens of texts, most of them short); custom patterns
        (which may use `^`, `$` or `\\s`) read each text on its own. Candidates may overlap,
        and one may cross from one text into the next (a PEM block split over two): `resolve`."""
        joined = texts[0] if len(texts) == 1 else _SEPARATOR.join(texts)
        # Escapes written into a text (JSON, a `repr`) are read as what they stand for
        # (`unescaped`): the same length, so a match's place in it is its place in `joined`.
        escaped = "\\" in joined
        view = unescaped(joined) if escaped else joined
        found: Found = []
        self._builtin_in(found, spaced(view))
        if self._custom:
            at = 0
            for text in texts:
                end = at + len(text)
                self._custom_in(found, text if view is joined else view[at:end], at)
                at = end + 1
        # A percent-encoded value (`ada%40example.com`), or figures written as code-point
        # escapes (`\\uff14...`), reads as a value only decoded: read there too (two `memchr`
        # for a text holding neither `%` nor a backslash).
        if ("%" in joined or escaped) and may_decode(joined, escaped):
            self._decoded_in(found, texts, joined)
        found.sort(key=_START)
        return joined, found

    def _decoded_in(self, found: Found, texts: Sequence[str], joined: str) -> None:
        """The candidates of `joined` decoded (`Decoded`) that its views do not hold, placed on
        the characters that write them. What the views find stays (a `%41` may be a figure's
        `%` before a card, `100%4111 ...`): where the two overlap, the most specific, then
        leftmost, longest wins (`resolve`), as between any two candidates."""
        decoded = Decoded.of(joined)
        more: Found = []
        self._builtin_in(more, spaced(decoded.text))
        if self._custom:
            at = 0
            for text in texts:  # each text's decoded part (its line break is written as one)
                end = at + len(text)
                low, high = decoded.position(at), decoded.position(end)
                self._custom_in(more, decoded.text[low:high], low)
                at = end + 1
        if not more:
            return
        known = {candidate[1:] for candidate in found}
        begin, close = decoded.start, decoded.end
        for priority, low, high, label, normal in more:
            candidate = (begin(low), close(high), label, normal)
            if candidate not in known:
                found.append((priority, *candidate))

    def resolve(self, texts: Sequence[str], found: Found) -> Found:
        """`found` (`find`'s candidates of `texts`) with overlaps resolved (the most specific
        kind first, then leftmost, longest) and the candidates of texts that one crosses
        replaced by what those texts hold read alone: by start, in the joined texts."""
        # Where each text's successor starts (after its line break).
        following = list(accumulate(map(add, map(len, texts), repeat(1))))
        again: set[int] = set()  # texts a candidate crosses out of or into
        for _, start, end, _, _ in found:
            first, last = bisect_right(following, start), bisect_right(following, end - 1)
            if first != last:
                again.update(range(first, last + 1))
        if again:
            found = [c for c in found if bisect_right(following, c[1]) not in again]
        kept = _without_overlaps(found)
        if again:
            for index in again:  # read alone (one text: nothing crosses)
                base = following[index - 1] if index else 0
                for priority, start, end, label, normal in self.scan([texts[index]]):
                    kept.append((priority, base + start, base + end, label, normal))
            kept.sort(key=_START)
        return kept

    @property
    def short(self) -> int:
        """A text shorter than this holds no match (0: any may)."""
        return 0 if self._custom else _SHORTEST

    def _custom_in(self, found: Found, text: str, at: int = 0) -> None:
        for index, (label, pattern) in enumerate(self._custom):
            for m in pattern.finditer(text):
                if m.end() > m.start():
                    found.append((index - 100, at + m.start(), at + m.end(), label, m.group()))

    def _builtin_in(self, found: Found, written: str) -> None:
        # IBANs, cards, phone numbers and IP addresses are read in `figured` text (its digits
        # ASCII ones, the same length), secrets and addresses as written. The anchors are
        # found in the former: a secret's anchor and pattern start with the same ASCII
        # characters, which `figured` leaves where they are.
        text = figured(written)
        hits = None if self._anchors is None else self._anchors.find(text)
        if self._secrets is not None:
            self._secrets.find(found, written, hits, self._names)
        if self._email is not None and "@" in written:
            self._emails(found, written)
        if hits is not None:
            where = self._where
            if self._iban is not None:
                self._ibans_at(found, text, _of(hits, where["iban"]))
            if self._numeric:
                runs = _of(hits, where["run"])
                if runs:
                    self._runs_in(found, text, runs)
            if self._ipv6 is not None:
                hints = _of(hits, where["ipv6"])
                if hints:
                    self._ipv6_near(found, text, sorted({start for _, start, _ in hints}))
            return
        # IBANs, cards, phone numbers and IP addresses all hold digits (an IPv6 address may
        # not: `fe80::` is looked for regardless).
        digits = any(digit in text for digit in "0123456789")
        if self._iban is not None and digits:
            self._walk(found, "iban", text, 0, len(text), self._iban, lead=IBAN_LEAD)
        if self._numbers is not None and digits:
            runs = [(0, start, end) for start, end in _leads(text, self._numbers.finditer(text))]
            self._runs_in(found, text, runs)
        if self._ipv6 is not None and ":" in text:
            self._ipv6_near(found, text, [hint.start() for hint in _IPV6_HINT.finditer(text)])

    def _ipv6_near(self, found: Found, text: str, hints: list[int]) -> None:
        """What `finditer` of the IPv6 pattern finds, looked for near its hints (`hints`: where
        they start, in order) only. A match holds a hint (two colons) or starts one character
        into one (`ip:2001::`, the hint `:2001:`), and is at most 39 characters long, so it
        starts at most 40 before one or 1 after; and what the pattern finds at a start depends
        on the 42 characters from two before it, so each hint's search ends 42 characters after
        it (ending there, a longer text would read differently only after the hint: a match
        found there is not taken). A timestamp (`06:17:16`) costs a search of
        80 characters, not of the rest of the text. Hints at most 41 apart (whose ranges of
        starts, 40 before to 1 after, meet) are searched as one, up to 42 after the last: the
        first match in it starts where the first a search per hint would find does, and
        `1:1:1:...` costs one search of the text, not one of 80 characters per colon."""
        pattern = self._ipv6
        assert pattern is not None
        candidates = []
        done = 0  # where the last match ended: the next one starts there or later
        size, count, at = len(text), len(hints), 0
        while at < count:
            first = hints[at]
            while at + 1 < count and hints[at + 1] - hints[at] <= 41:
                at += 1
            last = hints[at]
            at += 1
            while (low := max(done, first - 40)) <= last:
                m = pattern.search(text, low, min(size, last + 42))
                if m is None or m.start() > last + 1:
                    break
                candidates.append(m)
                done = m.end()
        if candidates:
            self._confirmed(found, "ip", text, candidates)

    def _confirmed(
        self,
        found: Found,
        kind: str,
        text: str,
        candidates: Iterable[Any],
        lead: int = 0,
    ) -> None:
        _, recogniser = self._builtin[kind]
        validate, cache = recogniser.validate, self._validated[kind]
        for m in candidates:
            at = m.start() - lead
            confirmed = _known(validate, text[at : m.end()], cache)
            if confirmed is not None:
                matched, normal = confirmed
                found.append((_PRIORITY[kind], at, at + len(matched), recogniser.label, normal))

    def _emails(self, found: Found, text: str) -> None:
        """The addresses around each `@`. `found` holds the secrets found: an address is read
        between them (its letters may run into one, `sk-...é0@example.com`, and an address
        overlapping a secret would lose to it whole), and an `@` inside one is the secret's."""
        assert self._email is not None
        before, after = _EMAIL_WINDOW
        done = 0  # where the last address ended: the next one starts after it
        at = text.find("@")
        match, local, seen = self._email.match, self._local.match, self._addresses
        if found:  # (a run's texts mostly hold no secret: no tables made of none)
            found.sort(key=_START)
            starts = list(map(_START, found))
            reach = list(accumulate(map(_END, found), max))
        else:
            starts = reach = []
        while at != -1:
            # (A comparison, not `max()`: the builtin's call costs ~700 instructions an `@`.)
            low, high = at - before, at + after
            if low < done:
                low = done
            if starts:
                secret = bisect_right(starts, at)
                if secret:
                    if reach[secret - 1] > at:
                        at = text.find("@", at + 1)
                        continue
                    low = max(low, reach[secret - 1])
                if secret < len(starts):
                    high = min(high, starts[secret])
            # What is found depends on the window and where its `@` is only (the patterns look
            # neither before nor after the window, and the local part is read back from the
            # `@`); a window repeats (the input's address again in a prompt). The same window
            # text can hold its `@` at two places (clipped by an address before it, or by the
            # text's end): the place is part of the key.
            key = (at - low, text[low:high])
            address = seen.get(key, _UNSEEN)
            if address is _UNSEEN:
                if len(seen) >= _CACHE_SIZE:
                    seen.clear()
                # The address starts where its local part does, read back from the `@` (up
                # to 64 characters: one try, where a search would try every place before it).
                part = local(text, low, at)
                m = None if part is None else match(text, part.start(), high)
                address = seen[key] = (
                    None if m is None else (m.start() - low, m.end() - low, m.group().lower())
                )
            if address is not None and address[0] <= at - low < address[1]:
                start, end, normal = low + address[0], low + address[1], address[2]
                found.append((_EMAIL, start, end, "EMAIL", normal))
                done = end
                at = text.find("@", done)
            else:
                at = text.find("@", at + 1)

    def _ibans_at(self, found: Found, text: str, hits: list[Hit]) -> None:
        # What `_walk` finds (the pattern starts at the check digits, `IBAN_LEAD` in): tried
        # at each hit, none inside an IBAN confirmed; `re` matches at a place in half the time
        # `regex` takes (the pattern reads the same).
        iban, recogniser = self._builtin["iban"]
        validate, cache = recogniser.validate, self._validated["iban"]
        done = 0
        for _, start, _ in hits:
            if start < done:
                continue
            m = iban.match(text, start + IBAN_LEAD)
            if m is None:
                continue
            confirmed = _known(validate, text[start : m.end()], cache)
            if confirmed is not None:
                matched, normal = confirmed
                done = start + len(matched)
                found.append((_PRIORITY["iban"], start, done, recogniser.label, normal))

    def _runs_in(self, found: Found, text: str, runs: list[Hit]) -> None:
        """The values in the number runs at `runs` (their anchor's hits: _, start, end, where
        `_leads` says), in order."""
        # A run whose digits lie inside a value found already (an IBAN's digits, a secret) is
        # not looked at (every card, phone or IP address in it ends with a digit, so it would
        # overlap that value and be dropped): the values found so far by start, and the
        # furthest end among those starting no later.
        found.sort(key=_START)  # (the candidates are sorted by start in the end anyway)
        starts = list(map(_START, found))
        reach = list(accumulate(map(_END, found), max))
        seen = self._runs  # a run's values depend on it and the character before it only
        separators = NUMBER_SEPARATORS
        for _, start, end in runs:
            # (A value reaching past the run's last digit reaches past its start.) One reaching
            # into it: the run is read from its end (what overlaps it would lose to it, and
            # would hide a card after an IBAN, `DE89 ... 00 3000000000007`).
            before = bisect_right(starts, start)
            if before and reach[before - 1] > start:
                last = end  # the run's last digit's end (a run may end with separators)
                while text[last - 1] in separators:
                    last -= 1
                if reach[before - 1] >= last:
                    continue
                start = reach[before - 1]
            # One starting inside it (`... 4567 0@example.com`): the run ends there.
            if before < len(starts) and starts[before] < end:
                end = starts[before]
            # The character before (none at the start reads as a line break: no look-behind
            # of a card, phone or IPv4 pattern tells them apart).
            key = text[start - 1 : end] if start else _SEPARATOR + text[:end]
            known = seen.get(key)
            if known is None:
                if len(seen) >= _CACHE_SIZE:
                    seen.clear()
                known = seen[key] = self._run_values(text, start, end)
            for priority, s, e, kind, value in known:  # mostly one, often none
                found.append((priority, start + s, start + e, kind, value))

    def _run_values(self, text: str, start: int, end: int) -> list[tuple[int, int, int, str, str]]:
        """The cards, IPv4 addresses and phone numbers in the run at `start:end`, placed
        relative to its start: each value in it, a phone number after a card too."""
        kinds = self._numeric
        chunk = text[start:end]
        digits = sum(map(chunk.count, _DIGITS))
        values: Found = []
        if "card" in kinds and digits >= 13:
            self._walk(values, "card", text, start, end)
        if "ip" in kinds and digits >= 4 and chunk.count(".") >= 3:
            self._walk(values, "ip", text, start, end)
        if "phone" in kinds and digits >= 7:
            # In the parts of the run that hold no card or address (a phone number is the
            # least specific: it would lose to an overlapping one), with one budget of
            # candidates that are not one for the whole run (`_phones`).
            budget, at = self.PHONE_TRIES, start
            for _, s, e, _, _ in sorted(values, key=_START):
                if s > at:
                    budget = self._phones(values, text, at, s, budget)
                at = max(at, e)
            if at < end:
                self._phones(values, text, at, end, budget)
        return [(p, s - start, e - start, label, normal) for p, s, e, label, normal in values]

    def _phones(self, found: Found, text: str, start: int, end: int, budget: int) -> int:
        """The phone numbers in `text[start:end]` (a part of a run of figures holding no card
        or IP address); returns what is left of `budget`, how many more candidates that are
        not a phone number the run may try.

        First the numbers `finditer` finds (after one found, the next is looked for from
        where it ends; after a candidate that is not one, nor any cut of it, past it). Then
        inside each candidate that was not one, a number starting at one of its later groups
        of digits (`1234 415 555 0132`: the candidate from `1234` is not one, the one from
        `415` is), ending before the next number found first (those are found still):
        `PHONE_INNER_TRIES` of them at most, each read as it is, not cut back (one parse).
        A parse costs ~30-80 us, so a run may try `PHONE_TRIES` candidates that are not one
        (a candidate from the start of a group cut back a few times, `_cut_until_valid`),
        then no more: 20 kB of `1234 5678 ...` costs as many parses as a run of 200
        characters, not one every few digits. A realistic run tries a few (the side-by-side
        values of tests/privacy/test_scan_hostile.py); what a run holds depends on the run
        alone."""
        compiled, recogniser = self._builtin["phone"]
        search = compiled.search
        validate, cache = recogniser.validate, self._validated["phone"]
        whole = self._validated[_WHOLE_PHONE]  # candidates validated as they are, not cut
        priority, label = _PRIORITY["phone"], recogniser.label
        missed: list[tuple[int, int, int]] = []  # (start, end, how many found before it)
        firsts: list[int] = []  # where the numbers found first start
        at = start
        while at < end and budget > 0:
            m = search(text, at, end)
            if m is None:
                break
            begin = m.start()
            confirmed = _known(validate, text[begin : m.end()], cache)
            if confirmed is None:
                budget -= 1
                missed.append((begin, m.end(), len(firsts)))
                at = m.end()
                continue
            matched, normal = confirmed
            found.append((priority, begin, begin + len(matched), label, normal))
            firsts.append(begin)
            at = begin + len(matched)
        done = start  # where the last number found inside a candidate ends
        for low, high, before in missed:
            limit = firsts[before] if before < len(firsts) else end
            at = max(low + 1, done)
            inner = self.PHONE_INNER_TRIES
            while budget > 0 and inner > 0:
                m = search(text, at, limit)
                if m is None or m.start() >= high:
                    break
                begin = m.start()
                confirmed = _known(validate, text[begin : m.end()], whole, cuts=0)
                if confirmed is None:
                    budget -= 1
                    inner -= 1
                    at = begin + 1
                    continue
                matched, normal = confirmed
                done = at = begin + len(matched)
                found.append((priority, begin, done, label, normal))
        return budget

    def _walk(
        self,
        found: Found,
        kind: str,
        text: str,
        start: int,
        end: int,
        pattern: Any = None,
        lead: int = 0,
    ) -> None:
        """The values of `kind` in `text[start:end]`, as `finditer` finds candidates, except
        that after one confirmed the next is looked for from where the value confirmed ends
        (not past what its candidate took: `415 555 0132 415 555 0199` holds two, and two
        IBANs one space apart), and after one that is not, from the next place the pattern
        may start (a card after a phone number: the candidate from the phone number's first
        digit takes both and fails); phone numbers are looked for by `_phones`. `lead`: how
        many characters of the value come before where its pattern matches. Each place is
        tried once, and a candidate spans at most a few dozen characters: linear in the
        text."""
        compiled, recogniser = self._builtin[kind]
        search = (pattern or compiled).search
        validate, cache = recogniser.validate, self._validated[kind]
        priority, label = _PRIORITY[kind], recogniser.label
        shortest = _SHORTEST_CARD if kind == "card" else 0
        at = start + lead
        while at < end:
            m = search(text, at, end)
            if m is None:
                return
            begin = m.start() - lead
            confirmed = _known(validate, text[begin : m.end()], cache, shortest)
            if confirmed is None:
                at = m.start() + 1
                continue
            matched, normal = confirmed
            found.append((priority, begin, begin + len(matched), label, normal))
            at = begin + len(matched) + lead


def _leads(text: str, runs: Iterable[Any]) -> list[tuple[int, int]]:
    """Where the runs (`NUMBER_RUN` matches) begin and end: a run begins at its first digit,
    one written `+44 ...` or `(415) ...` at the first `+` or `(` of the separators just before
    it (what the runs' anchor finds)."""
    spans = []
    separators, leads = NUMBER_SEPARATORS, NUMBER_LEADS
    for run in runs:
        start, end = run.span()
        lead = start
        while lead > 0 and text[lead - 1] in separators:
            lead -= 1
        while lead < start and text[lead] not in leads:
            lead += 1
        spans.append((lead, end))
    return spans


def _of(hits: list[Hit], anchor: int) -> list[Hit]:
    """The hits of one anchor (hits come by anchor)."""
    return hits[bisect_left(hits, (anchor,)) : bisect_left(hits, (anchor + 1,))]


_START: Final = itemgetter(1)
_END: Final = itemgetter(2)


def _without_overlaps(found: Found) -> Found:
    """The candidates kept (`found` by start), most specific kind first, then leftmost,
    longest: by start. (Candidates of different texts never overlap: none crosses.)"""
    if all(a[2] <= b[1] for a, b in pairwise(found)):
        return found  # none overlaps: all are kept
    kept: Found = []  # by start, none overlapping
    for candidate in sorted(found):  # by priority, start, end
        start, end = candidate[1], candidate[2]
        at = bisect_left(kept, start, key=_START)  # the first kept that starts there or later
        if at > 0 and kept[at - 1][2] > start:
            continue  # the one before reaches into this
        if at < len(kept) and kept[at][1] < end:
            continue  # this reaches into the next
        kept.insert(at, candidate)
    return kept
