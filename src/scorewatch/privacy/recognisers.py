"""The built-in recognisers: what each kind of personal data looks like, and how a candidate is
confirmed before it is replaced.

One regular expression finds the candidates of every enabled kind in a single pass over a text;
a candidate is then confirmed by the kind's validator, from a maintained library where a
checksum or a numbering plan decides:

- `email`: `local@domain.tld`, letters of any script in both parts; the pattern decides;
- `secret`: `Bearer ...`, `sk-...`, `sk_live_...`, `ghp_...`, `AKIA...`, `xox?-...`, `AIza...`,
  JSON Web Tokens, PEM private keys, `api_key=...` / `"password": "..."`; the pattern decides;
- `iban`: two capitals, two check digits, 11 to 30 more; `stdnum.iban` (mod-97 checksum);
- `card`: 13 to 19 digits, spaces or dashes between; `stdnum.luhn` (Luhn checksum);
- `ip`: dotted quads, colon-separated hex groups; `ipaddress.ip_address`;
- `phone`: 7 to 20 digits and separators, `+` or `(` first; `phonenumbers` (a valid number of its
  region, or of the policy's `phone_region` when written without a country code).

A candidate that fails its check is cut back at its last separator and tried again (a phone
number followed by another figure, an IBAN followed by a capitalised word), a few times at most.
The libraries are imported on first use, so `import scorewatch` pays nothing for them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = ["KINDS", "Kind", "Recogniser", "builtin_recognisers"]

Kind = Literal["email", "phone", "card", "iban", "ip", "secret"]
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)

# A validator returns the value's normal form (so one address written two ways gets one marker),
# or None when the candidate is not one.
Validator = Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class Recogniser:
    """One kind of data: its marker's label, its candidate pattern, and its check."""

    kind: str
    label: str
    pattern: str
    validate: Validator | None = None


def _email(text: str) -> str | None:
    return text.lower()


def _secret(text: str) -> str | None:
    return text


def _iban(text: str) -> str | None:
    from stdnum import iban

    compact: str = iban.compact(text)
    return compact if iban.is_valid(compact) else None


def _card(text: str) -> str | None:
    # (A candidate holds digits, spaces and dashes; most of those a run of figures is tried
    # for are cut back below 13 digits: they cost no import.)
    digits = text.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or len(set(digits)) == 1:
        return None
    from stdnum import luhn

    return digits if luhn.is_valid(digits) else None


def _ip(text: str) -> str | None:
    # An IPv6 address after or before a colon that is not part of it (`ip:` written first,
    # `2001:db8::1: refused`), where the pattern took that colon: taken with it.
    end = len(text) - 1 if text.endswith(":") else len(text)
    start = 1 if text.startswith(":") else 0
    for candidate in dict.fromkeys((text, text[:end], text[start:], text[start:end])):
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            pass
    return None


# What `_national_digits` reads: ASCII digits and the separators a phone candidate holds, no
# `+` (a number in international form: any length its country has).
_NATIONAL: Final = re.compile(r"[0-9 \t().-]+")
_SEPARATORS_DROPPED: Final = str.maketrans("", "", " \t().-")


def _national_lengths(region: str) -> tuple[re.Pattern[str], frozenset[int]] | None:
    """How many digits a valid number of `region`'s country written without `+` nor an
    international prefix may have: (the region's international prefix, those counts), or None
    where that is not bounded this simply (a national prefix that is a pattern, or one that is
    rewritten: then every candidate is parsed).

    `phonenumbers.parse` reads such a number as the region's: its national significant number
    (whose length `is_valid_number` requires to be one of the possible lengths of one of the
    country's regions) is its digits less, at most, the country code and a national prefix
    twice (once where the country code is stripped, once after; the prefix of the region or of
    the country's main region). Anything else is not valid, so not parsed (a parse costs
    ~30-80 us: `1234 5678 9012 3456` read in the US has 16 digits, a US number 10 to 13)."""
    import phonenumbers
    from phonenumbers.phonemetadata import PhoneMetadata

    metadata = PhoneMetadata.metadata_for_region(region.upper(), None)
    if metadata is None or metadata.country_code is None:
        return None
    code = metadata.country_code
    # The national prefix is stripped by the region's rules, or its country's main region's.
    prefix = 0
    main = phonenumbers.region_code_for_country_code(code)
    for data in (metadata, PhoneMetadata.metadata_for_region_or_calling_code(code, main)):
        if data is None or data.national_prefix_transform_rule:
            return None
        parsing = data.national_prefix_for_parsing or ""
        if parsing and not parsing.isdigit():
            return None
        prefix = max(prefix, len(parsing))
    lengths: set[int] = set()
    for other in phonenumbers.COUNTRY_CODE_TO_REGION_CODE.get(code, ()):
        data = PhoneMetadata.metadata_for_region_or_calling_code(code, other)
        possible = None if data is None or data.general_desc is None else data.general_desc
        if possible is None or not possible.possible_length:
            return None
        lengths.update(possible.possible_length)
    if not lengths or min(lengths) < 1 or metadata.international_prefix is None:
        return None
    stripped = len(str(code)) + 2 * prefix
    return re.compile(metadata.international_prefix), frozenset(
        length + more for length in lengths for more in range(stripped + 1)
    )


def _phone(region: str | None) -> Validator:
    bounds: list[tuple[re.Pattern[str], frozenset[int]] | None] = []  # made on first use

    def validate(text: str) -> str | None:
        import phonenumbers

        if region is not None and _NATIONAL.fullmatch(text) is not None:
            if not bounds:
                bounds.append(_national_lengths(region))
            if bounds[0] is not None:
                international, counts = bounds[0]
                digits = text.translate(_SEPARATORS_DROPPED)
                if len(digits) not in counts and international.match(digits) is None:
                    return None
        try:
            number = phonenumbers.parse(text, region)
        except phonenumbers.NumberParseException:
            return None
        if not phonenumbers.is_valid_number(number):
            return None
        return str(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164))

    return validate


# Secrets by their documented shapes: OpenAI and Anthropic keys (`sk-`, `sk-ant-`); Stripe secret
# and restricted keys; GitHub tokens; AWS access key ids; Slack tokens; Google API keys; JSON Web
# Tokens; PEM private keys. Each starts with its literal, and a look-behind after the literal
# keeps `task-...` from reading as `sk-...`. Each comes with
# - its gate: characters every match holds, the rarer the better; a text without one of them is
#   not searched for that shape (looking for one character costs far less than a search);
# - its anchor: how it starts, a Hyperscan expression of a fixed number of characters (there:
#   `privacy.anchors`), all of them found in one pass; the pattern is then matched there.
# (gate, (anchor, its length), pattern)
SECRET_SHAPES: Final = (
    ("k-", ("sk-", 3), r"sk-(?<![A-Za-z0-9-]sk-)(?:ant-)?[A-Za-z0-9_-]{16,}"),
    ("k_", ("sk_", 3), r"sk_(?<![A-Za-z0-9-]sk_)(?:live|test)_[A-Za-z0-9]{16,}"),
    ("k_", ("rk_", 3), r"rk_(?<![A-Za-z0-9-]rk_)(?:live|test)_[A-Za-z0-9]{16,}"),
    ("h_", ("gh[pousr]_", 4), r"gh(?<![A-Za-z0-9-]gh)[pousr]_[A-Za-z0-9]{30,}"),
    ("_", ("github_pat_", 11), r"github_pat_(?<![A-Za-z0-9-]github_pat_)[A-Za-z0-9_]{20,}"),
    ("AI", ("A(?:KIA|SIA)", 4), r"A(?<![A-Za-z0-9-]A)(?:KIA|SIA)[0-9A-Z]{16}(?![0-9A-Za-z])"),
    ("x-", ("xox[abprs]-", 5), r"xox(?<![A-Za-z0-9-]xox)[abprs]-[A-Za-z0-9-]{10,}"),
    ("AIz", ("AIza", 4), r"AIza(?<![A-Za-z0-9-]AIza)[0-9A-Za-z_-]{35}"),
    (
        "J.",
        ("eyJ", 3),
        r"eyJ(?<![A-Za-z0-9-]eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    (
        "-BEGIN",
        ("-----BEGIN ", 11),
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    # An HTTP bearer credential, as it is usually capitalised.
    *(
        (
            word[0] + word[-1],
            (word, len(word)),
            word + rf"(?<![A-Za-z0-9-]{word})[ \t]+[A-Za-z0-9._~+/=-]{{8,}}",
        )
        for word in ("Bearer", "bearer", "BEARER")
    ),
)
SECRET_PATTERNS: Final = tuple(pattern for _, _, pattern in SECRET_SHAPES)
# Read in the lower-cased text (so any capitalisation): a value assigned to a secret-looking
# name (`api_key=...`, `"password": "..."`); each with its gate, a part of the name a text
# must hold for the pattern to be looked for, and its anchors, the name's spellings (found
# case-blind in one pass, `privacy.anchors`, in ASCII text). A quote may be written escaped
# (`\"password\": \"...\"`, JSON held in a JSON string).
# (gate, anchors, pattern)
SECRET_SHAPES_ANY_CASE: Final = tuple(
    (gate, spellings, name + r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[^\s\"',;]{6,}")
    for gate, name, spellings in (
        ("key", "api[_-]?key", ("api_key", "api-key", "apikey")),
        ("secret", "secret", ("secret",)),
        ("passw", "password", ("password",)),
        ("passw", "passwd", ("passwd",)),
        ("token", "access[_-]?token", ("access_token", "access-token", "accesstoken")),
    )
)
SECRET_PATTERNS_ANY_CASE: Final = tuple(pattern for _, _, pattern in SECRET_SHAPES_ANY_CASE)
# An address (read by `regex`: `\p{...}`): the local part of up to 64 letters, digits, marks
# (any script: RFC 6531 allows them) and `._%+-`, without a look-behind (a longer run of them
# before the `@`, letters glued to the address in a script written without spaces, has its last
# 64 taken: an address is never left whole); the domain's labels of letters, digits, marks and
# `-` (IDN), its last of two letters at least. A digit after the last label ends it.
_ADDRESS: Final = r"[\p{L}\p{M}\p{N}_-]"
EMAIL_LOCAL: Final = r"[\p{L}\p{M}\p{N}_.%+-]{1,64}"
EMAIL_PATTERN: Final = (
    EMAIL_LOCAL + "@" + _ADDRESS + r"+(?:\." + _ADDRESS + r"+)*\.[\p{L}\p{M}]{2,}"
)
# A run of digits and the separators numbers are written with (7 characters at least from its
# first digit): card, phone and IPv4 candidates are looked for inside such runs only, one scan
# for all three. The run starts at a `+` or `(` among the separators before its first digit.
NUMBER_RUN: Final = r"[0-9][0-9 \t().+:/-]{6,}"
# A run's anchor (`privacy.anchors`, found with its leftmost start): the run, from the first `+`
# or `(` of the separators before its first digit, and the character that ends it.
NUMBER_RUN_ANCHOR: Final = r"(?:[+(][ \t().+:/-]*)?" + NUMBER_RUN + r"[^0-9 \t().+:/-]"
NUMBER_SEPARATORS: Final = " \t().+:/-"
NUMBER_LEADS: Final = "+("
# Digits of other scripts (Unicode's decimal digits, `\d`: full-width `４`, Arabic-Indic `٤`)
# and the full-width forms of the separators figures are written with (`－`, `（`, `＋`...),
# read as ASCII ones (`scanner.figured`).
OTHER_FIGURES: Final = r"(?![0-9])\d|[\uff08\uff09\uff0b\uff0d-\uff0f\uff1a]"
# What may not come right before a card, phone number or IP address: a digit of any script (the
# value would be part of a longer number), an ASCII letter (part of an identifier, a hash,
# base64: `id4111...` is not read as a card). A letter of another script may (`カード4111...`,
# `é203.0.113.42`: text written without a space before a figure), and `_` (markdown's emphasis).
_NOT_IN_A_WORD: Final = r"(?<![A-Za-z])(?<!\d)"
CARD_PATTERN: Final = r"(?<!\.)" + _NOT_IN_A_WORD + r"\d(?:[ -]?\d){12,18}(?!\w)"
PHONE_PATTERN: Final = r"(?<!\+)" + _NOT_IN_A_WORD + r"(?:\+|\(?)\d[\d \t().-]{5,18}\d(?![\w])"
# (`ip:203.0.113.42`, `203.0.113.42:8080`: a colon before or after, a port, ends it.)
IPV4_PATTERN: Final = r"(?<!\.)" + _NOT_IN_A_WORD + r"(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)"
# An IPv6 address may follow a colon that is not part of it (`ip:2001:db8::1`), not one after a
# hex digit or another colon (it would start inside an address), and be followed by one
# (`2001:db8::1: refused`; `_ip` takes one that the pattern took), not by `.` and a digit
# (`::ffff:192.0.2.1`: its IPv4 address is found as one).
IPV6_PATTERN: Final = (
    r"(?<![0-9A-Za-z])(?<![0-9A-Fa-f:]:)"
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f]|:[0-9A-Fa-f:]|\.\d)"
)
# Where an IPv6 address may be: the pattern is looked for from 40 characters before the first.
IPV6_HINT: Final = r":[0-9A-Fa-f]{1,4}:|::"
# An IBAN is found by its check digits (a digit is rarer than a capital, so the scan is faster),
# and its match starts two characters later than the IBAN: `IBAN_LEAD`.
IBAN_PATTERN: Final = (
    r"[0-9](?<=[A-Z]{2}[0-9])(?<![0-9A-Za-z][A-Z]{2}[0-9])[0-9](?:[ ]?[A-Z0-9]){11,30}"
    r"(?![0-9A-Za-z])"
)
IBAN_LEAD: Final = 2
# Where an IBAN may start (its country code and check digits): its anchor (`privacy.anchors`).
IBAN_ANCHOR: Final = ("[A-Z]{2}[0-9]{2}", 4)


def builtin_recognisers(phone_region: str | None) -> dict[str, Recogniser]:
    """The built-in kinds, most specific first: where two overlap, the earlier one wins (a
    secret may hold an address, a card number looks like a phone number)."""
    return {
        "secret": Recogniser("secret", "SECRET", "|".join(SECRET_PATTERNS), _secret),
        "email": Recogniser("email", "EMAIL", EMAIL_PATTERN, _email),
        "iban": Recogniser("iban", "IBAN", IBAN_PATTERN, _iban),
        "card": Recogniser("card", "CARD", CARD_PATTERN, _card),
        "ip": Recogniser("ip", "IP", IPV4_PATTERN, _ip),
        "phone": Recogniser("phone", "PHONE", PHONE_PATTERN, _phone(phone_region)),
    }
