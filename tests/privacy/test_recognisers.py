"""The recognisers and one run's markers (scorewatch.privacy)."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from scorewatch.privacy import KINDS, PrivacyPolicy, current_redaction, redacting

pytestmark = pytest.mark.unit

EVERYTHING = PrivacyPolicy(redact=["all"])


def redact(text: str, policy: PrivacyPolicy = EVERYTHING) -> str:
    return policy.start().text(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to ada.l+news@example.co.uk today", "write to <EMAIL_1> today"),
        ("call (415) 555-0132 now", "call <PHONE_1> now"),
        ("or +44 20 7946 0958.", "or <PHONE_1>."),
        ("card 4111 1111 1111 1111 ok", "card <CARD_1> ok"),
        ("card 4111-1111-1111-1111", "card <CARD_1>"),
        ("iban DE89 3704 0044 0532 0130 00 THANKS", "iban <IBAN_1> THANKS"),
        ("GB82 WEST 1234 5698 7654 32", "<IBAN_1>"),
        ("from 192.168.1.20, then", "from <IP_1>, then"),
        ("v6 2001:db8::1 here", "v6 <IP_1> here"),
        ("Authorization: Bearer abcdefghijklmnop123", "Authorization: <SECRET_1>"),
        ("sent bearer abcdefghijklmnop123 along", "sent <SECRET_1> along"),
        ("x" * 300 + " sk-proj-abcdefghijklmnopqrstuv", "x" * 300 + " <SECRET_1>"),
        ("key sk-proj-abcdefghijklmnopqrstuv", "key <SECRET_1>"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "token <SECRET_1>"),
        ("aws AKIAIOSFODNN7EXAMPLE", "aws <SECRET_1>"),
        ('{"Password": "hunter2secret"}', '{"<SECRET_1>"}'),
        ("API_KEY=abcdef123456", "<SECRET_1>"),
        # Issue 34's gaps: an address in another script or glued to its letters (RFC 6531),
        # every value of a run of figures, a number grouped with no-break spaces.
        ("merci éada@example.com!", "merci <EMAIL_1>!"),
        ("連絡先はada@example.comです", "<EMAIL_1>"),
        ("to ada@exämple.de, or", "to <EMAIL_1>, or"),
        ("4111 1111 1111 1111 +44 20 7946 0958", "<CARD_1> <PHONE_1>"),
        ("+44 20 7946 0958 4111 1111 1111 1111", "<PHONE_1> <CARD_1>"),
        ("415 555 0132, 4111111111111111/415-555-0199", "<PHONE_1>, <CARD_1>/<PHONE_2>"),
        ("203.0.113.42:8080 or ip:2001:db8::1", "<IP_1>:8080 or ip:<IP_2>"),
        ("カード4111 1111 1111 1111", "カード<CARD_1>"),
        ("+33\u00a06\u00a012\u00a034\u00a056\u00a078", "<PHONE_1>"),
        ("Bearer\u00a0abcdefghijklmnop123", "<SECRET_1>"),
        ("_DE89370400440532013000_", "_<IBAN_1>_"),
    ],
)
def test_each_kind_is_replaced_by_its_marker(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 fails Luhn",
        "iban DE89 3704 0044 0532 0130 02 fails mod-97",
        "at 10:30:00 on 2024-01-15",
        "version 1.2.3.4.5 and 999.1.1.1",
        "order 12345, 3 items",
        "task-abcdefghijklmnopqrstuvw is a slug",
        "an author wrote about tokens and secrets",
        "0000 0000 0000 0000",
        # A figure glued to an ASCII letter before it is part of an identifier or a hash.
        "id4111111111111111 and x203.0.113.42",
    ],
)
def test_lookalikes_stay(text: str) -> None:
    assert redact(text) == text


def test_one_value_one_marker_throughout_a_run() -> None:
    run = EVERYTHING.start()
    assert run.text("ada@example.com and bob@example.com") == "<EMAIL_1> and <EMAIL_2>"
    # The same address in another case, the same number in another format: the same marker.
    assert run.text("ADA@Example.com called +1 415 555 0132") == "<EMAIL_1> called <PHONE_1>"
    assert run.text("(415) 555-0132") == "<PHONE_1>"
    # A new run numbers afresh, so markers never link two runs.
    assert EVERYTHING.start().text("bob@example.com") == "<EMAIL_1>"


def test_only_the_named_kinds_are_redacted() -> None:
    policy = PrivacyPolicy(redact=["email"])
    assert redact("ada@example.com 4111 1111 1111 1111", policy) == "<EMAIL_1> 4111 1111 1111 1111"
    assert not PrivacyPolicy().enabled
    assert redact("ada@example.com", PrivacyPolicy()) == "ada@example.com"
    assert PrivacyPolicy(redact="all").redact == KINDS


def test_custom_patterns_have_their_own_markers() -> None:
    policy = PrivacyPolicy(patterns={"employee_id": r"EMP-\d{6}"})
    assert redact("EMP-123456 and EMP-654321, EMP-123456", policy) == (
        "<EMPLOYEE_ID_1> and <EMPLOYEE_ID_2>, <EMPLOYEE_ID_1>"
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"redact": ["emails"]}, "redact"),
        ({"patterns": {"bad name": "x"}}, "bad name"),
        ({"patterns": {"id": "("}}, "does not compile"),
        ({"patterns": {"id": "x*"}}, "matches empty text"),
        ({"patterns": {"email": "x"}}, "built-in"),
        ({"phone_region": "XX"}, "phone_region"),
        ({"mask": ["email"]}, "mask"),
    ],
)
def test_a_bad_policy_is_refused_naming_what_is_wrong(
    options: dict[str, object], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        PrivacyPolicy.model_validate(options)


def test_phone_numbers_read_in_the_configured_region() -> None:
    london = PrivacyPolicy(redact=["phone"], phone_region="GB")
    assert redact("ring 020 7946 0958", london) == "ring <PHONE_1>"
    international_only = PrivacyPolicy(redact=["phone"], phone_region=None)
    assert redact("ring 020 7946 0958", international_only) == "ring 020 7946 0958"
    assert redact("ring +44 20 7946 0958", international_only) == "ring <PHONE_1>"


def test_non_ascii_text_keeps_its_characters() -> None:
    text = "İstanbul: ada@example.com — PASSWORD=geheim123 ✓"
    assert redact(text) == "İstanbul: <EMAIL_1> — <SECRET_1> ✓"


def test_markers_are_consistent_across_threads() -> None:
    run = EVERYTHING.start()
    seen: list[str] = []

    def work() -> None:
        seen.append(run.text("ada@example.com"))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(seen) == {"<EMAIL_1>"}


def test_the_current_redaction_is_scoped() -> None:
    run = EVERYTHING.start()
    assert current_redaction() is None
    with redacting(run):
        assert current_redaction() is run
    assert current_redaction() is None


def test_texts_scanned_together_read_as_each_alone() -> None:
    """`Redaction.prepare` scans a row's texts as one; each then reads as it would alone, a PEM
    block that only the two texts together would complete included."""
    texts = [
        "key sk-proj-abcdefghijklmnopqrstuv and +1 (415) 555-0132",
        "-----BEGIN RSA PRIVATE KEY-----",
        "MIIabc\n-----END RSA PRIVATE KEY-----",
        "call +44 20 7946 0958 or 192.168.1.20",
        "::",
        "ada@example.com paid with 4111 1111 1111 1111",
        "an ordinary sentence",
    ]
    together = EVERYTHING.start()
    assert together.prepare(texts) is True
    alone = EVERYTHING.start()
    assert [together.text(text) for text in texts] == [alone.text(text) for text in texts]
    assert together.prepare(["an ordinary sentence", "::"]) is False
    assert together.prepare(["ada@example.com paid with 4111 1111 1111 1111"]) is True
