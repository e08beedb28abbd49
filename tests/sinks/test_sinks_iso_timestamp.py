"""`iso_timestamp` writes what `strftime` wrote for every moment (it is every row's
`createdAt`, and the bound of every time query)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorewatch.sinks.record import iso_timestamp

pytestmark = pytest.mark.unit


def _by_strftime(moment: datetime) -> str:
    # The former text, kept as the reference.
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


_ZONES = st.one_of(
    st.none(),
    st.just(UTC),
    # Offsets with seconds and microseconds too: the milliseconds stay the moment's own.
    st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)).map(timezone),
)


def _text_or_error(moment: datetime) -> str:
    try:
        return _by_strftime(moment)
    except (OverflowError, ValueError) as error:
        return type(error).__name__


@given(st.datetimes(timezones=_ZONES))
def test_iso_timestamp_is_strftime_text(moment: datetime) -> None:
    try:
        text = iso_timestamp(moment)
    except (OverflowError, ValueError) as error:
        text = type(error).__name__
    assert text == _text_or_error(moment)


def test_iso_timestamp_years_before_1000_as_before() -> None:
    for moment in (
        datetime(999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1000, 1, 1, 0, 0, 0, 1_000, tzinfo=UTC),
        datetime(2026, 12, 6, 19, 4, 46, 446_123, tzinfo=timezone(timedelta(hours=5))),
    ):
        assert iso_timestamp(moment) == _by_strftime(moment)
    assert iso_timestamp(datetime(2026, 12, 6, 9, 4, 6, 5_999, tzinfo=UTC)) == (
        "2026-12-06T09:04:06.005Z"
    )
