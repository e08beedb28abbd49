"""A run's plain content (`ExtractedRun.plain_content`, what serve queues) is what reading its
JSON encoding back gives, for runs extracted from spans of random content and for the session
runs made of them; serve's queue item carries it, with the encoding's size, in a call marked
`plain_json` whose rows are the old encoding's."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import from_json, to_json

from scorewatch.privacy import PrivacyPolicy
from scorewatch.server.intake.otlp_traces import _item
from scorewatch.sinks.record import ScoreRecord, encode_record, encode_row, record_json
from scorewatch.sinks.sqlite import _ENCODE
from scorewatch.sinks.storable import stored_json
from scorewatch.traces import SpanRecord
from scorewatch.traces.run import ExtractedRun, extract_run
from scorewatch.traces.sessions import session_run

pytestmark = pytest.mark.unit

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
# Finds an address in a run's texts (the drawn ones hold one now and then).
_POLICY = PrivacyPolicy(redact=["email"])

# Text without lone surrogates: JSON encoding refuses those, before and after alike.
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6) | st.just("jo@example.com")
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
# What an attribute holds (`attributes_of`): JSON text, or a value of another kind.
_attribute_values = _json_values.map(json.dumps) | _json_values


def _reprs(value: Any) -> str:
    # `repr` tells a list from a tuple, 1 from 1.0 and -0.0 from 0.0, and NaN equals itself.
    return repr(value)


@st.composite
def _runs(draw: Any, number: int = 0) -> list[SpanRecord]:
    base = number * 100
    agent = SpanRecord(
        TRACE_ID,
        f"{base + 1:016x}",
        "invoke_agent",
        start_ns=draw(st.sampled_from([0, 1_700_000_000_123_456_789, 1_700_000_000_000_000_000])),
        end_ns=draw(st.sampled_from([0, 1_700_000_001_000_000_000])),
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "shop",
            "gen_ai.conversation.id": "c1",
        },
    )
    spans = [agent]
    history = [
        {"role": role, "parts": [{"type": "text", "content": draw(_text)}]}
        for role in draw(st.lists(st.sampled_from(["user", "assistant", "system"]), max_size=3))
    ]
    asked = {"role": "user", "parts": [{"type": "text", "content": "Where is order 7?"}]}
    calls = [
        {
            "type": "tool_call",
            "name": "lookup_order",
            "id": draw(st.sampled_from(["c1", "c2", 7])),
            "arguments": draw(_json_values),
        }
        for _ in range(draw(st.integers(0, 2)))
    ]
    answer = {"role": "assistant", "parts": [{"type": "text", "content": draw(_text)}]}
    spans.append(
        SpanRecord(
            TRACE_ID,
            f"{base + 2:016x}",
            "chat",
            parent_span_id=agent.span_id,
            start_ns=2,
            end_ns=3,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([*history, asked]),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": calls}, answer]
                ),
            },
        )
    )
    for index in range(draw(st.integers(0, 2))):  # tool spans: the calls come from them
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
        for key in ("gen_ai.tool.call.id", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
            if draw(st.booleans()):
                attributes[key] = draw(_attribute_values)
        spans.append(
            SpanRecord(
                TRACE_ID,
                f"{base + 3 + index:016x}",
                "execute_tool",
                parent_span_id=agent.span_id,
                start_ns=4 + index,
                attributes=attributes,
            )
        )
    if draw(st.booleans()):  # a retriever's documents: the run's context
        spans.append(
            SpanRecord(
                TRACE_ID,
                f"{base + 9:016x}",
                "retrieve",
                parent_span_id=agent.span_id,
                start_ns=9,
                attributes={
                    "openinference.span.kind": "RETRIEVER",
                    "retrieval.documents.0.document.content": draw(_text),
                    "retrieval.documents.1.document.content": "Order 7 shipped.",
                },
            )
        )
    return spans


def _extracted(spans: list[SpanRecord]) -> ExtractedRun | None:
    run = extract_run(spans[0], spans)
    return run if isinstance(run, ExtractedRun) else None


def _check(run: ExtractedRun) -> None:
    encoded = to_json([run.input, run.output])
    plain = run.plain_content()
    assert _reprs(list(plain)) == _reprs(from_json(encoded))
    assert to_json(list(plain)) == encoded
    item = _item(run, ("scorer",))
    assert _reprs([item.call.input, item.call.output]) == _reprs(from_json(encoded))
    assert item.size == len(encoded)
    # Marked so, its rows are written from it as it is: as the old encoding wrote them (the
    # walked row, the same call unmarked), with and without a policy that finds something.
    assert item.call.plain_json
    for redaction in (None, _POLICY.start()):
        record = ScoreRecord(
            id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=False,
            call=item.call, status="success", redaction=redaction,
            created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        )  # fmt: skip
        unmarked = dataclasses.replace(record, call=dataclasses.replace(item.call))
        walked = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
        assert encode_record(record, convert=_ENCODE) == walked
        assert encode_record(unmarked, convert=_ENCODE) == walked
        assert record_json(record) == stored_json(record.to_row()) == record_json(unmarked)


@settings(max_examples=300, deadline=None)
@given(_runs())
def test_a_runs_plain_content_is_its_json_read_back(spans: list[SpanRecord]) -> None:
    run = _extracted(spans)
    if run is not None:
        _check(run)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True).flatmap(
        lambda numbers: st.tuples(*(_runs(number) for number in numbers))
    )
)
def test_a_session_runs_plain_content_is_its_json_read_back(
    traces: tuple[list[SpanRecord], ...],
) -> None:
    turns = [run for spans in traces if (run := _extracted(spans)) is not None]
    if turns:
        _check(session_run(turns, "end"))


def test_messages_of_another_shape_are_copied_through_json() -> None:
    """What extraction never makes (a message without a time, a tuple, a time elsewhere) is
    read back from JSON as before, not kept as it is."""
    created = datetime(2026, 12, 6, 18, 0, 0, 120, tzinfo=UTC)
    run = ExtractedRun(
        trace_id=TRACE_ID,
        span_id=f"{1:016x}",
        span_name="invoke_agent",
        convention="gen_ai",
        input={
            "inputMessages": [{"role": "user", "createdAt": "text"}, ("a", created)],
            "rememberedMessages": ({"role": "user", "createdAt": created},),
            "systemMessages": [],
        },
        output=[{"role": "assistant", "createdAt": created}, 7],
    )
    _check(run)
    plain_input, plain_output = run.plain_content()
    assert plain_input["inputMessages"][1] == ["a", "2026-12-06T18:00:00.000120Z"]
    assert plain_input["rememberedMessages"] == [
        {"role": "user", "createdAt": "2026-12-06T18:00:00.000120Z"}
    ]
    assert plain_output == [{"role": "assistant", "createdAt": "2026-12-06T18:00:00.000120Z"}, 7]
    assert run.input["rememberedMessages"][0]["createdAt"] is created  # the run is unchanged


def test_the_content_under_the_messages_is_shared() -> None:
    """The comparisons above compare a copy that is not a JSON read: the messages are new, the
    values under them the run's own."""
    spans = [
        SpanRecord(
            TRACE_ID,
            f"{1:016x}",
            "invoke_agent",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
        ),
        SpanRecord(
            TRACE_ID,
            f"{2:016x}",
            "chat",
            parent_span_id=f"{1:016x}",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": '[{"role": "user", "content": "Where?"}]',
                "gen_ai.output.messages": '[{"role": "assistant", "content": "Here."}]',
            },
        ),
    ]
    run = _extracted(spans)
    assert run is not None
    plain_input, plain_output = run.plain_content()
    assert plain_input is not run.input and plain_output[0] is not run.output[0]
    assert isinstance(plain_output[0]["createdAt"], str)
    assert plain_output[0]["content"] is run.output[0]["content"]
