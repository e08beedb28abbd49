"""A model call under an agent read output first (`span_output`, then `read_rest` only when its
input is asked for), or input first (`span_input`, then `read_output` only when its output is
asked for), gives what reading it whole gives: span by span, and run by run against
`extract_run` with the shortcuts turned off."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorewatch.traces import SpanRecord
from scorewatch.traces import run as run_module
from scorewatch.traces.conventions import (
    read_output,
    read_rest,
    read_span,
    span_input,
    span_output,
)
from scorewatch.traces.run import extract_run
from scorewatch.traces.spans import SpanEvent

pytestmark = pytest.mark.unit

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"

_words = st.sampled_from(["", " ", "Where is order 7?", "Shipped.", "You help.", "x"])
_parts = st.one_of(
    st.builds(lambda text: {"type": "text", "content": text}, _words),
    st.builds(
        lambda name, call_id: {
            "type": "tool_call",
            "name": name,
            "id": call_id,
            "arguments": {"id": 7},
        },
        st.sampled_from(["lookup_order", "notify"]),
        st.sampled_from(["c1", "c2", None]),
    ),
    st.builds(
        lambda call_id, result: {"type": "tool_call_response", "id": call_id, "response": result},
        st.sampled_from(["c1", "c2"]),
        st.sampled_from(["shipped", {"status": "ok"}]),
    ),
    st.just("not a part"),
)
_roles = st.sampled_from(["system", "developer", "user", "assistant", "tool", None])
_messages = st.one_of(
    st.builds(
        lambda role, parts: {"role": role, "parts": parts}, _roles, st.lists(_parts, max_size=3)
    ),
    st.builds(lambda role, text: {"role": role, "content": text}, _roles, _words),
    _words,
    st.just(7),
)
_message_values = st.one_of(
    st.none(),
    st.lists(_messages, max_size=3).map(json.dumps),
    _messages.map(json.dumps),
    st.sampled_from(["not json", "[", "", "[]", "{}"]),
)
_system_values = st.one_of(
    st.none(), st.sampled_from(['"Be brief."', '[{"type":"text","content":"Be brief."}]', " "])
)
_event_lists = st.lists(
    st.sampled_from(
        [
            SpanEvent("gen_ai.user.message", 1, {"content": "Hi"}),
            SpanEvent("gen_ai.system.message", 1, {"content": "Be brief."}),
            SpanEvent("gen_ai.choice", 2, {"message": '{"content": "Hello"}'}),
        ]
    ),
    max_size=2,
).map(tuple)


@st.composite
def _model_spans(draw: Any, number: int = 1, parent: str | None = None) -> SpanRecord:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    for key, values in (
        ("gen_ai.input.messages", _message_values),
        ("gen_ai.output.messages", _message_values),
        ("gen_ai.system_instructions", _system_values),
    ):
        value = draw(values)
        if value is not None:
            attributes[key] = value
    if draw(st.booleans()):  # an OpenInference reading, for spans GenAI finds nothing in
        attributes["llm.output_messages.0.message.role"] = "assistant"
        attributes["llm.output_messages.0.message.content"] = "From OpenInference."
    return SpanRecord(
        TRACE_ID,
        f"{number:016x}",
        "chat",
        parent_span_id=parent,
        start_ns=number,
        end_ns=number + 1,
        attributes=attributes,
        events=draw(_event_lists),
    )


@settings(max_examples=400, deadline=None)
@given(_model_spans())
def test_a_span_read_one_side_first_reads_as_read_span(span: SpanRecord) -> None:
    """Output first (`span_output`, then `read_rest`) and input first (`span_input`, then
    `read_output`), where each applies, give `read_span`'s content."""
    whole = read_span(span)
    by_output = span_output(span)
    if by_output is not None:
        assert by_output.output
        assert whole is not None and by_output.convention == whole.convention
        assert by_output.output == whole.output
        assert read_rest(span, by_output) == whole
    by_input = span_input(span)
    if by_input is not None:
        assert by_input.output is None and (by_input.input or by_input.system)
        assert whole is not None and by_input.convention == whole.convention
        assert (by_input.input, by_input.system) == (whole.input, whole.system)
        assert read_output(span, by_input) == whole


_TOOL = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "lookup_order",
    "gen_ai.tool.call.id": "call_0",
    "gen_ai.tool.call.arguments": '{"id": 7}',
    "gen_ai.tool.call.result": '"shipped"',
}


@st.composite
def _runs(draw: Any) -> list[SpanRecord]:
    agent_attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
    for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
        if draw(st.booleans()):
            agent_attributes[key] = draw(_message_values.filter(lambda value: value is not None))
    agent = SpanRecord(TRACE_ID, f"{1:016x}", "invoke_agent", attributes=agent_attributes)
    spans = [agent]
    for number in range(2, draw(st.integers(2, 7))):
        if draw(st.integers(0, 3)) == 0:
            spans.append(
                SpanRecord(
                    TRACE_ID,
                    f"{number:016x}",
                    "execute_tool",
                    parent_span_id=agent.span_id,
                    start_ns=number,
                    attributes=dict(_TOOL),
                )
            )
        else:
            spans.append(draw(_model_spans(number, agent.span_id)))
    return spans


@settings(max_examples=400, deadline=None)
@given(_runs())
def test_a_run_reads_as_with_every_model_call_read_whole(spans: list[SpanRecord]) -> None:
    """`extract_run` of an agent with model calls of random content (input, output, system
    instructions, events, another convention's attributes) and tool spans, against the same
    with `span_output` and `span_input` finding nothing (every model call read whole, as
    before)."""
    lazy = extract_run(spans[0], spans)
    reading = run_module.span_output, run_module.span_input
    run_module.span_output = lambda span: None  # type: ignore[assignment]
    run_module.span_input = lambda span: None  # type: ignore[assignment]
    try:
        whole = extract_run(spans[0], spans)
    finally:
        run_module.span_output, run_module.span_input = reading
    assert lazy == whole


def test_the_shortcuts_are_taken() -> None:
    """The comparisons above compare something: a GenAI model call with an output is read
    output first (its input unread), one with an input input first (its output unread)."""
    message = {"role": "user", "parts": [{"type": "text", "content": "Shipped."}]}
    span = SpanRecord(
        TRACE_ID,
        f"{2:016x}",
        "chat",
        attributes={
            "gen_ai.input.messages": json.dumps([message]),
            "gen_ai.output.messages": json.dumps([{**message, "role": "assistant"}]),
        },
    )
    by_output, by_input = span_output(span), span_input(span)
    assert by_output is not None and by_output.input is None and by_output.output
    assert by_input is not None and by_input.output is None and by_input.input
