"""The scanner's shortcuts change nothing: a batch read in one pass (its texts repeating each
other, as a prompt repeats the input) finds what each text read alone finds; the compiled
anchors (Hyperscan) find what the pure-Python gates find; a scanner's caches (validated
values, number runs, address windows) change no outcome."""

from __future__ import annotations

import copy
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorewatch.privacy import PrivacyPolicy
from scorewatch.privacy.recognisers import IPV6_HINT, NUMBER_RUN
from scorewatch.privacy.scanner import Scanner, _leads, _of

pytestmark = pytest.mark.unit

# Values of every kind, look-alikes, and what sits next to them: letters ending in `r` (a
# bearer token's word), capitals and digits (an IBAN's), separators (a number run's), `:` and
# `=` (a `name = value` secret's), line breaks, and letters whose case folds reach ASCII (the
# Kelvin sign, the long s, a dotted capital I: the case-blind names read differently there).
_VALUES = [
    "ada.lovelace@example.com",
    "x@y.co",
    "+44 20 7946 0958",
    "(415) 555-0132",
    "415 555 0132",
    "4111 1111 1111 1111",
    "4111-1111-1111-1112",
    "DE89 3704 0044 0532 0130 00",
    "GB82WEST12345698765432",
    "203.0.113.42",
    "1.2.3.4.5",
    "2001:db8::1",
    "::1",
    "Bearer eyAbCdEfGhIjKlMnOp123",
    "bearer abcdefghijk",
    "sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy",
    "task-abcdefghijklmnopqrstu",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeK",
    "api_key=abcdef123456",
    '"Password": "hunter2secret"',
    "secret : s3cr3tvalue",
    "PASSWORD=Hunter2Hunter2",
    "Api-Key: abcdefgh12",
    "x-ApiKey='abcdefgh12'",
    "ACCESS_TOKEN =abc123def456",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN EC PRIVATE KEY-----",
    "-----END EC PRIVATE KEY-----",
    "2026-12-06T06:17:16.899Z",
    "fe80::1:2:3:4:5:6",
    "1:2:3:4:5:6:7:8:9",
    ":::",
    "+1 (415) 555-0132",
]
_WORDS = ["a", "or", "bearer", "key", "the", "call", "paid", "DE", "ZZ", "12", "x", "r", "é"]
_GLUE = [
    " ",
    "  ",
    "\n",
    ".",
    ". ",
    ", ",
    "-",
    ":",
    "=",
    "(",
    "+",
    "/",
    "",
    "\t",
    '"',
    "@",
    "\u212a",
    "\u017f",
    "\u0130",
    "\U0001f600",
]
_piece = st.one_of(st.sampled_from(_VALUES), st.sampled_from(_WORDS), st.sampled_from(_GLUE))
_text = st.lists(_piece, max_size=14).map("".join)
_POLICIES = [
    PrivacyPolicy(redact=["all"]),
    PrivacyPolicy(redact=["all"], phone_region=None),
    PrivacyPolicy(redact=["phone", "email"]),
    PrivacyPolicy(redact=["secret", "iban", "card"]),
]


@st.composite
def _batch(draw: st.DrawFn) -> list[str]:
    """Texts, some of them repeated inside others between random edges."""
    texts = draw(st.lists(_text, min_size=1, max_size=5))
    filler = " word and more words here "
    for _ in range(draw(st.integers(0, 3))):
        inner = draw(st.sampled_from(texts)) + filler * draw(st.integers(0, 3))
        texts.append(draw(_text) + inner + draw(_text) + filler + inner + draw(_text))
        texts.append(inner)
    return list(dict.fromkeys(texts))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batch(), st.sampled_from(_POLICIES))
def test_a_batch_reads_as_each_text_alone(texts: list[str], policy: PrivacyPolicy) -> None:
    together = policy.start()
    together.prepare(texts)
    alone = policy.start()
    assert [together.text(text) for text in texts] == [alone.text(text) for text in texts]


@pytest.mark.parametrize("policy", _POLICIES)
@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_text, min_size=1, max_size=6))
def test_compiled_anchors_find_what_the_python_gates_find(
    policy: PrivacyPolicy, texts: list[str]
) -> None:
    compiled = Scanner(policy.redact, policy.patterns, policy.phone_region)
    python = Scanner(policy.redact, policy.patterns, policy.phone_region, compiled=False)
    # Hyperscan is a dependency: where a policy has anchors, the compiled path runs.
    assert (compiled._anchors is not None) == bool(
        {"secret", "iban", "card", "ip", "phone"} & set(policy.redact)
    )
    cold = compiled.scan(texts)  # a fresh scanner: nothing cached yet
    assert cold == python.scan(texts)
    assert compiled.scan(texts) == cold  # every cache warm: the same outcome
    assert [compiled.matches(text) for text in texts] == [python.matches(text) for text in texts]


def test_a_number_run_inside_an_iban_is_not_read_as_a_phone_or_card() -> None:
    """The IBAN's digits followed by separators (`... 00. `) form a number run that reaches
    past the IBAN; what it could hold would overlap the IBAN, so it is not validated at all
    (a phone number's parse costs ~50-150 us) and the text reads as before."""
    policy = PrivacyPolicy(redact=["all"])
    scanner = Scanner(policy.redact, policy.patterns, policy.phone_region)
    text = "refund to DE89 3704 0044 0532 0130 00. Thanks, call (415) 555-0132 today"
    assert [(m[2], text[m[0] : m[1]]) for m in scanner.matches(text)] == [
        ("IBAN", "DE89 3704 0044 0532 0130 00"),
        ("PHONE", "(415) 555-0132"),
    ]
    assert list(scanner._validated["phone"]) == ["(415) 555-0132"]
    assert scanner._validated["card"] == {}


def test_a_policy_in_use_can_be_deep_copied() -> None:
    """Configuration holding a policy may be deep-copied after the policy has scanned: the
    compiled anchors are shared, not copied (Hyperscan's database cannot be)."""
    policy = PrivacyPolicy(redact=["all"])
    assert policy.start().text("key sk-proj-abcdefghijklmnopqrstuv") == "key <SECRET_1>"
    copied = copy.deepcopy(policy)
    assert copied.start().text("key sk-proj-abcdefghijklmnopqrstuv") == "key <SECRET_1>"


@settings(max_examples=500, deadline=None)
@given(texts=st.lists(_text, min_size=1, max_size=4))
def test_the_anchors_find_the_number_runs_and_the_ipv6_hint_as_re_does(texts: list[str]) -> None:
    """The runs' anchor (Hyperscan, leftmost start, ended by the character after the run) finds
    every run `NUMBER_RUN` finds, beginning where `_leads` says, in characters (texts with
    characters of two to four UTF-8 bytes too); the IPv6 hint's first start is `re`'s."""
    import regex

    scanner = PrivacyPolicy(redact=["all"])._scanner
    assert scanner._anchors is not None
    text = "\n".join(texts)
    hits = scanner._anchors.find(text)
    runs = [(start, end) for _, start, end in _of(hits, scanner._where["run"])]
    assert runs == _leads(text, regex.compile(NUMBER_RUN).finditer(text))
    hints = [start for _, start, _ in _of(hits, scanner._where["ipv6"])]
    first = re.search(IPV6_HINT, text)
    assert (min(hints) if hints else None) == (None if first is None else first.start())


def test_a_match_across_two_texts_of_a_batch_has_them_read_alone() -> None:
    """A PEM block's start in one text and its end in the next match as one block in the
    joined batch: both texts are read again on their own, the others keep their matches, and
    the markers are numbered in the texts' order."""
    texts = [
        "mail a@example.com",
        "-----BEGIN EC PRIVATE KEY-----",
        "x -----END EC PRIVATE KEY----- b@example.com",
        "again a@example.com and 203.0.113.42",
    ]
    policy = PrivacyPolicy(redact=["all"])
    together = policy.start()
    assert together.prepare(texts)
    assert [together.text(text) for text in texts] == [
        "mail <EMAIL_1>",
        "-----BEGIN EC PRIVATE KEY-----",
        "x -----END EC PRIVATE KEY----- <EMAIL_2>",
        "again <EMAIL_1> and <IP_1>",
    ]
    alone = policy.start()
    assert [alone.text(text) for text in texts] == [together.text(text) for text in texts]


_WITH_PATTERNS = PrivacyPolicy(
    redact=["all"], patterns={"TICKET": r"T-\d{3}|[a-z]+ or", "WHOLE": r"^x.*$"}
)


_PEM = ["-----BEGIN EC PRIVATE KEY-----", "x -----END EC PRIVATE KEY----- b@example.com"]


@st.composite
def _batch_with_crossings(draw: st.DrawFn) -> list[str]:
    """`_batch`, with PEM blocks split over two texts and an address a pattern overlaps."""
    texts = draw(_batch())
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(texts)))
        texts[at:at] = draw(st.sampled_from([_PEM, _PEM[:1], ["mail a@example.com"]]))
    return list(dict.fromkeys(texts))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batch_with_crossings(), st.sampled_from([*_POLICIES, _WITH_PATTERNS]))
def test_a_batch_is_its_texts_matches_replaced_numbered_by_first_appearance(
    texts: list[str], policy: PrivacyPolicy
) -> None:
    """Whatever the candidates (overlapping, across two texts, in texts too short), `prepare`
    gives each text with its matches read alone (`Scanner.matches`) replaced by one marker per
    value, numbered per label in the order the values first appear in the texts, and says
    whether anything changed."""
    run = policy.start()
    changed = run.prepare(texts)
    scanner = policy._scanner
    numbers: dict[str, int] = {}
    expected: dict[tuple[str, str], str] = {}
    redacted = []
    for text in texts:
        parts, at = [], 0
        for start, end, label, normal in scanner.matches(text):
            if (label, normal) not in expected:
                numbers[label] = numbers.get(label, 0) + 1
                expected[(label, normal)] = f"<{label}_{numbers[label]}>"
            parts += [text[at:start], expected[(label, normal)]]
            at = end
        redacted.append("".join(parts) + text[at:])
    assert [run.text(text) for text in texts] == redacted
    assert list(run.markers.items()) == list(expected.items())  # the same order
    assert changed == (redacted != texts)


def test_overlaps_and_a_block_across_texts_redact_as_before() -> None:
    """Recorded from the two-step path this pass replaced (placing, then replacing): a pattern
    overlapping an address, a PEM block across two texts, a text too short, repeats."""
    policy = PrivacyPolicy(
        redact=["all"], patterns={"TICKET": r"T-\d{3}|mail a", "WHOLE": r"^x -.*$"}
    )
    cases = {  # text -> its redacted form
        "mail a@example.com, then b@example.com": "<TICKET_1>@example.com, then <EMAIL_1>",
        "-----BEGIN EC PRIVATE KEY-----": "-----BEGIN EC PRIVATE KEY-----",
        "x -----END EC PRIVATE KEY----- c@example.com T-123": (
            "x -----END EC PRIVATE KEY----- <EMAIL_2> <TICKET_2>"
        ),
        "call +44 20 7946 0958 or (415) 555-0132, mail b@example.com": (
            "call <PHONE_1> or <PHONE_2>, mail <EMAIL_1>"
        ),
        "ab": "ab",
        "T-123 at 203.0.113.42 and sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy": (
            "<TICKET_2> at <IP_1> and <SECRET_1>"
        ),
    }
    run = policy.start()
    assert run.prepare(list(cases))
    assert {text: run.text(text) for text in cases} == cases
    assert list(run.markers.values()) == [
        "<TICKET_1>",
        "<EMAIL_1>",
        "<EMAIL_2>",
        "<TICKET_2>",
        "<PHONE_1>",
        "<PHONE_2>",
        "<IP_1>",
        "<SECRET_1>",
    ]


def test_the_one_pass_gives_up_on_overlaps_and_texts_crossed() -> None:
    """The pass replaces candidates none of which overlaps or crosses into the next text, and
    gives up, numbering no marker, where one does (the batch's candidates are then resolved
    first, `Scanner.resolve`, and the pass runs again)."""
    policy = PrivacyPolicy(redact=["all"], patterns={"TICKET": r"T-\d{3}|mail a"})
    scanner = policy._scanner

    def one_pass(texts: list[str]) -> bool | None:
        run = policy.start()._done
        joined, found = scanner.find(texts)
        outcome = run._replace(texts, joined, found)
        if outcome is None:
            assert run.markers == {}
            assert run._replace(texts, joined, scanner.resolve(texts, found))
        return outcome

    assert one_pass(["to a@example.com", "T-123 and 203.0.113.42", "none"]) is True
    assert one_pass(["nothing here", "x"]) is False
    assert one_pass(["a@example.com", *_PEM]) is None  # the block crosses two texts
    assert one_pass(["mail a@example.com"]) is None  # `mail a` overlaps the address


@pytest.mark.parametrize("length", [1, 62, 63, 64, 65, 127, 128, 129, 300])
@pytest.mark.parametrize("before", ["", "x", "(", "+ (", " +", "x (", "-- "])
def test_a_long_run_begins_where_the_lead_rule_says(before: str, length: int) -> None:
    """Runs longer than the random texts make (up to ~300 characters of digits and
    separators), with and without a lead (`+`, `(`) before them, at a text's start or not: the
    runs' anchor finds each where `_leads` says it begins."""
    import regex

    scanner = PrivacyPolicy(redact=["all"])._scanner
    assert scanner._anchors is not None
    run = ("1 2-3" * 100)[:length].rstrip(" -") or "1"
    for text in (f"{before}{run}0123456 end", f"a {before}{run}0123456", f"{before}{run}0123456"):
        hits = _of(scanner._anchors.find(text), scanner._where["run"])
        runs = [(start, end) for _, start, end in hits]
        assert runs == _leads(text, regex.compile(NUMBER_RUN).finditer(text))
        assert runs
