"""`Throughput.rate`: read without a lock, worked out as each run is timed; the same figures as
computing it from the moving average at each read."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorewatch.server.intake.throughput import Throughput

pytestmark = pytest.mark.unit


def _rate_at_read(
    durations: list[float], concurrency: int, minimum: int, weight: float
) -> float | None:
    """The rate as the moving average gives it when read (the definition)."""
    if len(durations) < minimum:
        return None
    average = durations[0]
    for duration in durations[1:]:
        average += weight * (duration - average)
    return concurrency / max(average, 1e-4)


@given(
    st.lists(st.floats(0.0, 60.0), max_size=60),
    st.integers(1, 64),
    st.integers(1, 30),
)
def test_the_rate_is_concurrency_over_the_moving_average_once_enough_runs_are_timed(
    durations: list[float], concurrency: int, minimum: int
) -> None:
    throughput = Throughput(concurrency, minimum=minimum)
    for count, duration in enumerate(durations, 1):
        throughput.finished(duration)
        assert throughput.rate() == _rate_at_read(durations[:count], concurrency, minimum, 0.05)


def test_no_rate_before_any_run_is_timed() -> None:
    assert Throughput(4).rate() is None
