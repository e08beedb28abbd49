"""The row of a call marked `plain_json` (a trace run's, serve's copy of it) is written from
its input and output as they are, not from JSON-ready copies: for any content, the stored
columns and the JSON line are exactly the old encoding's (kept here as the oracle: the walked
row, `encode_row(record.to_row())`, and the same record with its call unmarked). Content
that is not plain JSON (vouched for wrongly, or changed in place since) is found and written
from the copy after all; with a privacy policy the redactor reads the copies as before, and
what it replaces is never stored."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from scorewatch.core.call import AgentCall
from scorewatch.core.result import ScorerRunResult
from scorewatch.privacy import PrivacyPolicy
from scorewatch.sinks.record import (
    SCORE_COLUMNS,
    ScoreRecord,
    encode_record,
    encode_row,
    record_json,
)
from scorewatch.sinks.sqlite import _ENCODE
from scorewatch.sinks.storable import plain_storable_json, storable_json, stored_json

pytestmark = pytest.mark.unit

_POLICY = PrivacyPolicy(redact=["email"])
_EMAIL = "jo@example.com"

# Text with what cleaning replaces or the check looks for (NUL, unpaired surrogates, the words
# NaN and Infinity, an escaped NUL), non-ASCII, and an address for the redactor to find.
_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=10),
    st.sampled_from(
        ["\x00", "\ud800", "a\udfffb", "NaN", "-Infinity", "\\u0000", f"mail {_EMAIL}", "é"]
    ),
)
_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()  # NaN, infinities, -0.0
    | _text
)
# Plain JSON of exactly the types a JSON parser gives.
_plain = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)


class _Colour(enum.Enum):
    RED = "red"


class _Model(BaseModel):
    name: str
    at: dt.datetime


# What JSON does not write as it is (each found), and what it writes as the copy would (a
# tuple, a number or boolean key): none of it plain JSON.
_odd_leaves = st.sampled_from(
    [
        dt.datetime(2026, 12, 7, 9, 0, tzinfo=dt.UTC),
        dt.date(2026, 12, 7),
        Decimal("1.5"),
        b"bytes",
        {1, 2},
        frozenset({"a"}),
        _Colour.RED,
        _Model(name=_EMAIL, at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
        (1, "two"),
        (),
        {1: "one", 2.5: "half"},
        {True: "yes"},
        {("a", 1): "tuple key"},
        {"nested": [dt.time(9, 30)]},
    ]
)
_not_plain = st.recursive(
    _leaves | _odd_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)


def _record(draw: st.DrawFn, content: st.SearchStrategy[Any]) -> ScoreRecord:
    """A trace run's record whose call is marked `plain_json`, with `content` as its input
    and output; a failed run, or under a privacy policy, now and then."""
    call = AgentCall.of_plain_json(
        input=draw(st.none() | content),
        output=draw(st.none() | content),
        target="shop",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        run_id="b7ad6b7169203331",
        metadata={"spanName": "invoke_agent", "spanType": "agent_run", "toolCalls": ["lookup"]},
        score_source="trace",
        entity_type="agent",
    )
    failed = draw(st.booleans())
    result = ScorerRunResult(
        run_id="run", input=call.input, output=call.output, score=draw(st.floats() | st.none())
    )
    record = ScoreRecord(
        id="run",
        scorer_id="tool-call-accuracy",
        scorer_name="Tool call accuracy",
        scorer_description="",
        has_judge=False,
        call=call,
        status="failed" if failed else "success",
        result=result,
        error=draw(_text) if failed else None,
        created_at=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    )
    if draw(st.booleans()):
        record = dataclasses.replace(record, redaction=_POLICY.start())
    return record


def _unmarked(record: ScoreRecord) -> ScoreRecord:
    unmarked = dataclasses.replace(record, call=dataclasses.replace(record.call))
    assert not unmarked.call.plain_json
    return unmarked


def _check(record: ScoreRecord) -> None:
    assert record.call.plain_json
    walked = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
    encoded = encode_record(record, convert=_ENCODE)
    # `repr`: a NaN score compares by its text.
    assert repr(encoded) == repr(walked) == repr(encode_record(_unmarked(record), convert=_ENCODE))
    assert record_json(record) == stored_json(record.to_row()) == record_json(_unmarked(record))
    if record.redaction is not None:
        assert _EMAIL not in repr(encoded) and _EMAIL not in record_json(record)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_plain_calls_row_is_the_old_encodings(data: st.DataObject) -> None:
    _check(_record(data.draw, _plain))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_content_that_is_not_plain_json_is_written_from_its_copy(data: st.DataObject) -> None:
    _check(_record(data.draw, _not_plain))


@settings(max_examples=300, deadline=None)
@given(_plain)
def test_plain_storable_json_is_storable_json_of_plain_json(value: Any) -> None:
    assert plain_storable_json(value) == storable_json(value)


@pytest.mark.parametrize(
    "value", [dt.date(2026, 1, 1), {"a": [object()]}, {("k",): 1}, Decimal("2"), {1, 2}]
)
def test_plain_storable_json_refuses_what_json_does_not_write(value: Any) -> None:
    assert plain_storable_json(value) is None


def test_a_value_put_into_the_content_in_place_is_written_as_before() -> None:
    # The content changed after the call was marked (a scorer is handed the same objects): a
    # date under it is written as its ISO text, as the copy writes it, not as its `repr`.
    call_input: dict[str, Any] = {"k": "v"}
    record = _plain_record(AgentCall.of_plain_json(input=call_input, output="a"))
    call_input["at"] = dt.datetime(2026, 12, 7, 9, 0, tzinfo=dt.UTC)
    stored = encode_record(record, convert=_ENCODE)[SCORE_COLUMNS.index("input")]
    assert stored == '{"k": "v", "at": "2026-12-07T09:00:00Z"}'
    assert "datetime" not in record_json(record)
    _check(record)


def _plain_record(call: AgentCall, redaction: Any = None) -> ScoreRecord:
    return ScoreRecord(
        id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=False,
        call=call, status="success", redaction=redaction,
        created_at=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    )  # fmt: skip


def test_an_address_in_plain_content_is_redacted_under_a_policy() -> None:
    call = AgentCall.of_plain_json(
        input={"inputMessages": [{"role": "user", "content": f"I am {_EMAIL}"}]},
        output=[{"role": "assistant", "content": "Noted.", "score": math.inf}],
        target="shop",
        score_source="trace",
    )
    record = _plain_record(call, _POLICY.start())
    stored = encode_record(record, convert=_ENCODE)[SCORE_COLUMNS.index("input")]
    assert _EMAIL not in stored and "<EMAIL_1>" in stored
    _check(record)
