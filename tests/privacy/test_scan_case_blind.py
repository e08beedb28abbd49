"""A secret's name (`api_key = ...`, `secret: ...`) is read case-blind the same way in every
text: what a text holds does not depend on a character elsewhere in it or in its batch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorewatch.privacy import PrivacyPolicy
from scorewatch.privacy.scanner import Scanner

pytestmark = pytest.mark.unit

# The non-ASCII characters that match an ASCII letter case-blind (`re.IGNORECASE`): dotted
# capital I (whose lower-case form is two characters), dotless i, long s, Kelvin sign.
_FOLDING = ["\u0130", "\u0131", "\u017f", "\u212a"]
_NAMES = ["secret", "\u017fecret", "api_key", "api_\u212aey", "ap\u0131_key", "PASSWORD"]


def test_a_long_s_name_is_a_secret_whatever_else_the_text_or_batch_holds() -> None:
    """Read case-blind, `ſecret` is `secret` (as `re.IGNORECASE` reads it): alone, beside a
    dotted capital I, in a batch with one; so a batch reads as its texts alone."""
    policy = PrivacyPolicy(redact=["all"])
    assert policy.start().text("\u017fecret=abcdefgh1") == "<SECRET_1>"
    assert policy.start().text("\u0130 \u017fecret=abcdefgh1") == "\u0130 <SECRET_1>"
    assert policy.start().text("\u00e9 ap\u0131_key: abcdefgh1") == "\u00e9 <SECRET_1>"
    batch = ["\u0130 dotted", "\u017fecret=abcdefgh1"]
    together = policy.start()
    together.prepare(batch)
    assert [together.text(text) for text in batch] == ["\u0130 dotted", "<SECRET_1>"]


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(st.sampled_from(["a", " ", "\u00e9", "\U0001f600", *_FOLDING]), max_size=4),
    name=st.sampled_from(_NAMES),
    after=st.text(st.sampled_from(["b", " ", "\u00e9", *_FOLDING]), max_size=4),
    elsewhere=st.sampled_from(["", "plain", "\u00e9t\u00e9", *_FOLDING]),
    compiled=st.booleans(),
)
def test_a_name_reads_the_same_beside_any_character(
    before: str, name: str, after: str, elsewhere: str, compiled: bool
) -> None:
    """A `name = value` reads the same whichever characters stand beside it or in another
    text of the batch, with the compiled anchors or without."""
    scanner = Scanner(("secret",), {}, None, compiled=compiled)
    text = f"{before} {name} = abcdefgh1 {after}"
    alone = scanner.matches(text)
    assert [(label, text[start:end]) for start, end, label, _ in alone] == [
        ("SECRET", f"{name} = abcdefgh1")
    ]
    found = scanner.scan([elsewhere, text])
    at = len(elsewhere) + 1
    assert [(s - at, e - at, label, normal) for _, s, e, label, normal in found if s >= at] == (
        alone
    )
