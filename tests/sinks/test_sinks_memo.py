"""`BoundedMemo`, the sinks' memo of what rows repeat: it remembers up to its limit, then
stops (hostile rows only churn nothing), and answers as a dict."""

from __future__ import annotations

import pytest

from scorewatch.sinks.memo import BoundedMemo

pytestmark = pytest.mark.unit


def test_a_full_memo_stops_remembering_and_keeps_what_it_holds() -> None:
    memo: BoundedMemo[str, int] = BoundedMemo(limit=3)
    for number in range(5):
        assert memo.remember(str(number), number) == number  # the value, remembered or not
    assert memo == {"0": 0, "1": 1, "2": 2}
    assert memo.get("4") is None
    assert "1" in memo
