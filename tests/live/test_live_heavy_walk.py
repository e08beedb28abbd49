"""`call_is_heavy` with exact types asked first counts as the walk by ABCs did (differential).

The walk decides only where a scorer's steps run, but its answer must not move with the
reordering of its checks: the same count for every shape, subclasses and tuples included.
"""

from __future__ import annotations

from collections import OrderedDict, UserDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorewatch.core.call import AgentCall
from scorewatch.live.engine import call_is_heavy

pytestmark = pytest.mark.unit


def _by_abcs(call: AgentCall, limit: int) -> bool:
    """The walk as it was: every value asked by `isinstance`, an ABC for containers."""
    first, second, truth = call.input, call.output, call.ground_truth
    if truth is None and type(first) is str and type(second) is str:
        return len(first) + len(second) + 8 > limit
    budget = limit
    pending: list[Any] = [first, second, truth]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            budget -= len(value)
        elif isinstance(value, Mapping):
            pending.extend(value.values())
            budget -= len(value)
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            pending.extend(value)
            budget -= len(value)
        else:
            budget -= 8
        if budget < 0:
            return True
    return False


class _Text(str):
    pass


class _Count(int):
    pass


class _List(list):  # type: ignore[type-arg]
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.text(max_size=10).map(_Text),
    st.integers(0, 9).map(_Count),
    st.binary(max_size=20),
    st.binary(max_size=5).map(bytearray),
    st.just(datetime(2026, 12, 6, tzinfo=UTC)),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=4).map(tuple),
        st.lists(inner, max_size=4).map(_List),
        st.dictionaries(st.text(max_size=6), inner, max_size=6),
        st.dictionaries(st.text(max_size=4), inner, max_size=3).map(_Dict),
        st.dictionaries(st.text(max_size=4), inner, max_size=3).map(OrderedDict),
        st.dictionaries(st.text(max_size=4), inner, max_size=3).map(UserDict),
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(_values, _values, st.one_of(st.none(), _values), st.integers(0, 300))
def test_the_walk_counts_as_by_abcs(first: Any, second: Any, truth: Any, limit: int) -> None:
    call = AgentCall(input=first, output=second, ground_truth=truth, target="t")
    assert call_is_heavy(call, limit) == _by_abcs(call, limit)


def test_a_run_of_json_values_counts_each_value() -> None:
    # A trace's run shape: the mapping 2, the list 1, the message 2, "user" 4, None 8, the
    # list 2, the numbers 8 each; the output's text 2, the missing truth 8: 45 in all.
    run = {"m": [{"role": "user", "n": None}], "k": [1, 2.5]}
    call = AgentCall(input=run, output="ab", target="t")
    assert call_is_heavy(call, 44) and not call_is_heavy(call, 45)
    assert _by_abcs(call, 44) and not _by_abcs(call, 45)


@settings(max_examples=300, deadline=None)
@given(_values, _values, st.one_of(st.none(), _values), st.integers(-5, 5000))
def test_the_walk_counts_as_by_abcs_at_any_limit(
    first: Any, second: Any, truth: Any, limit: int
) -> None:
    # Texts and scalars are counted where their container is read, containers wait: the same
    # answer as the value-by-value walk whatever the limit, negative and past the count too.
    call = AgentCall(input=first, output=[second, {"k": truth}], ground_truth=truth, target="t")
    assert call_is_heavy(call, limit) == _by_abcs(call, limit)


class _Unwalkable(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise AssertionError("a container longer than the limit was walked")


def test_a_container_longer_than_the_limit_is_not_walked() -> None:
    # Its length alone passes the limit: the answer needs none of its items.
    wide = _Unwalkable(range(50))
    assert call_is_heavy(AgentCall(input={"m": wide}, output="a", target="t"), 40)
    assert call_is_heavy(AgentCall(input=[wide], output=[], target="t"), 49)
