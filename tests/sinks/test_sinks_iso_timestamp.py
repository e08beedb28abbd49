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


@given(
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 58)),
    st.lists(st.integers(-2_500_000, 2_500_000), min_size=1, max_size=30),
)
def test_moments_a_second_apart_or_within_one_read_as_strftime(
    start: datetime, offsets: list[int]
) -> None:
    """`iso_timestamp` remembers the text of the last second it wrote: moments within that
    second, before and after it, and back again, each read as `strftime` writes them."""
    base = start.replace(tzinfo=UTC)
    for offset in offsets:
        try:
            moment = base + timedelta(microseconds=offset)
        except OverflowError:
            continue
        assert iso_timestamp(moment) == _by_strftime(moment)


def test_the_remembered_second_is_not_a_years_before_1000_text() -> None:
    early = datetime(999, 12, 31, 23, 59, 59, 1_000, tzinfo=UTC)
    assert iso_timestamp(early) == _by_strftime(early) == "999-12-31T23:59:59.001Z"
    later = datetime(999, 12, 31, 23, 59, 59, 2_000, tzinfo=UTC)
    assert iso_timestamp(later) == "999-12-31T23:59:59.002Z"
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    before = epoch - timedelta(microseconds=1)
    assert [iso_timestamp(m) for m in (epoch, before, epoch)] == [
        "1970-01-01T00:00:00.000Z",
        "1969-12-31T23:59:59.999Z",
        "1970-01-01T00:00:00.000Z",
    ]
