"""The merge of an agent message's tool-invocation parts and legacy list, with its shortcuts
(no legacy list; both lists naming the same calls in the same order), against the merge as the
reference writes it (differential)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorewatch.scorers.utils import _as_mapping, _merged_invocations, extract_tool_calls

pytestmark = pytest.mark.unit


def _plain_call_id(item: Any) -> str | None:
    record = _as_mapping(item)
    call_id = record.get("toolCallId") if record is not None else None
    return call_id if isinstance(call_id, str) and call_id else None


def _by_the_reference(legacy: list[Any], from_parts: list[Mapping[str, Any]]) -> list[Any]:
    """The merge without shortcuts (as it was before them)."""
    part_ids = {call_id for call_id in map(_plain_call_id, from_parts) if call_id}
    positions = {
        call_id: index for index, call_id in enumerate(map(_plain_call_id, legacy)) if call_id
    }

    def legacy_only(item: Any) -> bool:
        return _as_mapping(item) is not None and _plain_call_id(item) not in part_ids

    merged: list[Any] = []
    next_legacy = 0
    for invocation in from_parts:
        call_id = _plain_call_id(invocation)
        shared = positions.get(call_id) if call_id else None
        if shared is not None and shared >= next_legacy:
            merged.extend(item for item in legacy[next_legacy:shared] if legacy_only(item))
            next_legacy = shared + 1
        merged.append(invocation)
    merged.extend(item for item in legacy[next_legacy:] if legacy_only(item))
    return merged


# Few ids, so lists share them, repeat them, and hold them in the same or another order.
_ids = st.one_of(st.sampled_from(["a", "b", "c", "d", ""]), st.none(), st.just(7))


@st.composite
def _invocation(draw: st.DrawFn) -> Any:
    call_id = draw(_ids)
    if draw(st.integers(0, 9)) == 0:  # not a call at all
        return draw(st.one_of(st.none(), st.just("text"), st.just(3)))
    record: dict[str, Any] = {"toolName": draw(st.sampled_from(["x", "y"])), "state": "result"}
    if call_id is not None or draw(st.booleans()):
        record["toolCallId"] = call_id
    return record


@st.composite
def _lists(draw: st.DrawFn) -> tuple[list[Any], list[Mapping[str, Any]]]:
    from_parts = [
        item for item in draw(st.lists(_invocation(), max_size=5)) if isinstance(item, dict)
    ]
    shape = draw(st.sampled_from(["same", "copies", "other", "empty"]))
    if shape == "same":  # the very objects, as an agent message holds them
        legacy: list[Any] = list(from_parts)
    elif shape == "copies":
        legacy = [dict(item) for item in from_parts]
    elif shape == "empty":
        legacy = []
    else:
        legacy = draw(st.lists(_invocation(), max_size=5))
    return legacy, from_parts


@settings(max_examples=500, deadline=None)
@given(_lists())
def test_the_merge_gives_what_the_reference_merge_gives(
    lists: tuple[list[Any], list[Mapping[str, Any]]],
) -> None:
    legacy, from_parts = lists
    merged = _merged_invocations(legacy, from_parts)
    expected = _by_the_reference(legacy, from_parts)
    assert [id(item) for item in merged] == [id(item) for item in expected]


def test_a_legacy_only_call_keeps_its_place_when_the_ids_differ() -> None:
    first = {"toolCallId": "a", "toolName": "x", "state": "result"}
    second = {"toolCallId": "b", "toolName": "y", "state": "result"}
    only_legacy = {"toolCallId": "c", "toolName": "z", "state": "result"}
    output = [
        {
            "role": "assistant",
            "content": {
                "parts": [
                    {"type": "tool-invocation", "toolInvocation": first},
                    {"type": "tool-invocation", "toolInvocation": second},
                ],
                "toolInvocations": [first, only_legacy, second],
            },
        }
    ]
    assert extract_tool_calls(output).tools == ["x", "z", "y"]
    # The same id twice in both lists: the parts, as the reference's merge gives them.
    twice = [first, dict(first)]
    assert _merged_invocations([first, dict(first)], twice) == _by_the_reference(
        [first, dict(first)], twice
    )
