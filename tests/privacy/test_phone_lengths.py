"""The phone validator skips the parse of a candidate whose digits no valid number of the
policy's region written nationally has (`recognisers._national_lengths`): a differential
against the validator that parses every candidate (the oracle, as it was)."""

from __future__ import annotations

import phonenumbers
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from phonenumbers.phonemetadata import PhoneMetadata

from scorewatch.privacy.recognisers import _national_lengths, _phone

pytestmark = pytest.mark.unit


def _parsed(text: str, region: str | None) -> str | None:
    """The validator before the length check: every candidate parsed."""
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return str(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164))


_REGIONS = sorted(phonenumbers.SUPPORTED_REGIONS)
_COMMON = ["US", "CA", "DE", "FR", "IN", "NL", "ES", "IT", "MX", "BR", "GB", "JP", "PR", "AG"]
_VALIDATORS = {region: _phone(region) for region in _REGIONS}


@st.composite
def _candidate(draw: st.DrawFn) -> tuple[str, str]:
    region = draw(st.one_of(st.sampled_from(_COMMON), st.sampled_from(_REGIONS)))
    metadata = PhoneMetadata.metadata_for_region(region, None)
    lead = ""
    if metadata is not None:
        lead = draw(
            st.sampled_from(
                [
                    "",
                    str(metadata.country_code),
                    metadata.national_prefix or "",
                    (metadata.preferred_international_prefix or "") + "1",
                    "011",
                    "00",
                    "0",
                    "1",
                ]
            )
        )
    example_number = phonenumbers.example_number(region)
    if example_number is not None and draw(st.booleans()):
        body = str(example_number.national_number)
        body = body[: draw(st.integers(0, len(body)))] + draw(st.text("0123456789", max_size=4))
    else:
        body = draw(st.text("0123456789", min_size=0, max_size=20))
    digits = lead + body
    out = []
    for digit in digits:
        out.append(digit)
        if draw(st.integers(0, 4)) == 0:
            out.append(draw(st.sampled_from([" ", "-", ".", "(", ")", "\t"])))
    return region, "".join(out)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_candidate())
@example(case=("US", "5678 9012 3456 7890"))
@example(case=("US", "1 415 555 0132"))
@example(case=("US", "011 44 20 7946 0958"))
@example(case=("US", "(415) 555-0132"))
@example(case=("US", "415 555 0132 1"))
def test_the_length_check_keeps_what_the_parse_finds(case: tuple[str, str]) -> None:
    region, text = case
    assert _VALIDATORS[region](text) == _parsed(text, region), (region, text)


def test_each_regions_example_numbers_pass_written_nationally() -> None:
    for region in _REGIONS:
        validate = _VALIDATORS[region]
        for kind in (phonenumbers.PhoneNumberType.FIXED_LINE, phonenumbers.PhoneNumberType.MOBILE):
            number = phonenumbers.example_number_for_type(region, kind)
            if number is None:
                continue
            national = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
            assert validate(national) == _parsed(national, region), (region, national)


def test_the_bound_of_the_default_region() -> None:
    bound = _national_lengths("US")
    assert bound is not None
    assert 10 in bound[1] and 16 not in bound[1]
