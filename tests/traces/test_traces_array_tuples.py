"""An array attribute is held as a tuple (`spans.attributes_of`), so that the trace buffer's held
spans give the cyclic collector fewer objects to walk; what is read from it is what the list it
was gives.

Differential: the conversion against a plain copy of the one it replaces (arrays as lists at every
depth), on hostile values (every kind, nested arrays and kvlists, empty and unset values); and
every run extracted from spans holding the tuples against the same spans holding the lists, in
every convention, down to the types of the queue item's values (`repr` tells a list from a
tuple). The buffer's per-trace containers the collector need not track are checked with `gc`."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from pydantic_core import to_json

from scorewatch.server.intake.otlp_traces import _item
from scorewatch.traces.assembly import TraceBuffer
from scorewatch.traces.run import SpanTree, extract_run
from scorewatch.traces.select import SpanSelector
from scorewatch.traces.spans import SpanEvent, SpanRecord, attributes_of

pytestmark = pytest.mark.unit


def _plain_any_value(value: AnyValue) -> Any:
    """The conversion before this change, by kind: arrays are lists at every depth."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "array_value":
        return [_plain_any_value(item) for item in value.array_value.values]
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "kvlist_value":
        return _plain_attributes_of(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None


def _plain_attributes_of(pairs: Any) -> dict[str, Any]:
    return {pair.key: _plain_any_value(pair.value) for pair in pairs}


def _listed(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes as the plain conversion held them: a top-level tuple as a list."""
    return {k: list(v) if type(v) is tuple else v for k, v in attributes.items()}


def _array(items: list[AnyValue]) -> AnyValue:
    value = AnyValue()
    value.array_value.values.extend(items)
    return value


def _kvlist(pairs: list[tuple[str, AnyValue]]) -> AnyValue:
    value = AnyValue()
    value.kvlist_value.values.extend(KeyValue(key=k, value=v) for k, v in pairs)
    return value


_JSON_TEXTS = [
    '[{"role": "user", "content": "hi"}]',
    '[{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]',
    '{"content": "x", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}',
    '["a", "b"]',
    '"quoted"',
    "[1, 2",
    "",
    "stop",
    "invoke_agent",
    "chat",
    "execute_tool",
    "AGENT",
    "LLM",
    "TOOL",
    "agent",
    "tool",
]
_scalars = st.one_of(
    st.sampled_from(_JSON_TEXTS).map(lambda text: AnyValue(string_value=text)),
    st.text(max_size=6).map(lambda text: AnyValue(string_value=text)),
    st.just(AnyValue()),  # unset: None
    st.booleans().map(lambda flag: AnyValue(bool_value=flag)),
    st.integers(-(2**63), 2**63 - 1).map(lambda number: AnyValue(int_value=number)),
    st.floats(allow_nan=False).map(lambda number: AnyValue(double_value=number)),
    st.binary(max_size=4).map(lambda raw: AnyValue(bytes_value=raw)),
)
_KEYS = [
    "role",
    "content",
    "text",
    "type",
    "name",
    "arguments",
    "parts",
    "message.role",
    "message.content",
    "message.contents.0.message_content.text",
    "tool_call.function.name",
    "tool_call.function.arguments",
]


def _nest(children: st.SearchStrategy[AnyValue]) -> st.SearchStrategy[AnyValue]:
    return st.one_of(
        st.lists(children, max_size=3).map(_array),
        st.lists(st.tuples(st.sampled_from(_KEYS), children), max_size=3).map(_kvlist),
    )


_values = st.recursive(_scalars, _nest, max_leaves=8)

# Attributes every convention reads (gen_ai, OpenInference, OpenLLMetry), flattened and not.
_SPAN_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.conversation.id",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.name",
    "gen_ai.completion.0.tool_calls.0.arguments",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.content",
    "llm.input_messages.1.message.contents.0.message_content.text",
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "tool.name",
    "tool.parameters",
    "retrieval.documents.0.document.content",
    "session.id",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "gen_ai.event.content",
]
_MARKERS = [
    ("gen_ai.operation.name", "invoke_agent"),
    ("openinference.span.kind", "AGENT"),
    ("traceloop.span.kind", "agent"),
    ("gen_ai.operation.name", "chat"),
    ("openinference.span.kind", "LLM"),
    ("gen_ai.operation.name", "execute_tool"),
    ("openinference.span.kind", "TOOL"),
    ("traceloop.span.kind", "tool"),
]
_CONTENT = [
    ("gen_ai.input.messages", '[{"role": "user", "content": "hi"}]'),
    ("input.value", "question"),
    ("gen_ai.output.messages", '[{"role": "assistant", "content": "ok"}]'),
    ("output.value", "answer"),
]


def _marked(pairs: list[tuple[str, AnyValue]], marker: int, content: int) -> Any:
    """A span's attributes with a convention's kind first (most spans are read as something)
    and a readable input or output (most runs have content), the random ones after them."""
    fixed = [_MARKERS[marker], _CONTENT[content]]
    return [(key, AnyValue(string_value=text)) for key, text in fixed] + pairs


_span_pairs = st.builds(
    _marked,
    st.lists(st.tuples(st.sampled_from(_SPAN_KEYS), _values), max_size=10),
    st.integers(0, len(_MARKERS) - 1),
    st.integers(0, len(_CONTENT) - 1),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", ""]), _values), max_size=8))
def test_an_array_attribute_is_a_tuple_of_what_the_list_held(
    pairs: list[tuple[str, AnyValue]],
) -> None:
    keyvalues = [KeyValue(key=key, value=value) for key, value in pairs]
    converted = attributes_of(keyvalues)
    plain = _plain_attributes_of(keyvalues)
    # repr tells a list from a tuple and 0 from False at every depth.
    assert repr(_listed(converted)) == repr(plain)
    for key, value in converted.items():
        assert (type(value) is tuple) == (type(plain[key]) is list)
    # Stored and sent as JSON, the two are the same bytes.
    assert to_json(converted) == to_json(plain)
    assert json.dumps(converted, sort_keys=True) == json.dumps(plain, sort_keys=True)


def _records(spans: list[list[tuple[str, AnyValue]]], plain: bool) -> list[SpanRecord]:
    convert = _plain_attributes_of if plain else attributes_of
    records = []
    for number, pairs in enumerate(spans):
        keyvalues = [KeyValue(key=key, value=value) for key, value in pairs]
        event = SpanEvent("gen_ai.choice", number, convert(keyvalues[:2]))
        records.append(
            SpanRecord(
                "ab" * 16,
                f"{number + 1:016x}",
                f"span {number}",
                # A chain under the first span, and a sibling: children and ancestors read.
                None if number == 0 else f"{max(number - 1, 1) if number > 1 else 1:016x}",
                start_ns=number * 10,
                end_ns=number * 10 + 5,
                attributes=convert(keyvalues),
                events=(event,) if number % 2 else (),
                resource=convert(keyvalues[-1:]),
            )
        )
    return records


@settings(max_examples=400, deadline=None)
@given(st.lists(_span_pairs, min_size=1, max_size=5))
def test_the_runs_of_spans_with_tuples_are_the_runs_of_spans_with_lists(
    spans: list[list[tuple[str, AnyValue]]],
) -> None:
    held = _records(spans, plain=False)
    plain = _records(spans, plain=True)
    held_tree, plain_tree = SpanTree(held), SpanTree(plain)
    for span, plain_span in zip(held, plain, strict=True):
        assert repr(_listed(dict(span.attributes))) == repr(plain_span.attributes)
        found = extract_run(span, held_tree)
        expected = extract_run(plain_span, plain_tree)
        assert repr(found) == repr(expected)
        if hasattr(found, "to_call"):
            item, plain_item = _item(found, ("s",)), _item(expected, ("s",))
            assert repr(item.call) == repr(plain_item.call)
            assert item.size == plain_item.size
            assert to_json(item.call) == to_json(plain_item.call)
        for selector in (
            SpanSelector(attributes={"gen_ai.response.finish_reasons": "stop"}),
            SpanSelector(attributes={"openinference.span.kind": "AGENT"}),
            SpanSelector(attributes={"gen_ai.input.messages": 1}),
        ):
            assert selector.matches(span) == selector.matches(plain_span)


def test_a_selector_matches_an_item_of_an_array_attribute() -> None:
    value = _array([AnyValue(string_value="length"), AnyValue(string_value="stop")])
    attributes = attributes_of([KeyValue(key="gen_ai.response.finish_reasons", value=value)])
    assert attributes == {"gen_ai.response.finish_reasons": ("length", "stop")}
    span = SpanRecord("ab" * 16, "01" * 8, "chat", attributes=attributes)
    assert SpanSelector(attributes={"gen_ai.response.finish_reasons": "stop"}).matches(span)
    assert not SpanSelector(attributes={"gen_ai.response.finish_reasons": "x"}).matches(span)


def test_a_held_model_span_and_its_trace_give_the_collector_less_to_track() -> None:
    """A model span's finish reasons: the tuple, then its attribute dict, are untracked by a
    full collection; the held trace's selected ids are never tracked."""
    reasons = _array([AnyValue(string_value="stop")])
    attributes = attributes_of(
        [
            KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="chat")),
            KeyValue(key="gen_ai.response.finish_reasons", value=reasons),
        ]
    )
    buffer = TraceBuffer([SpanSelector(operation=["chat"])])
    span = SpanRecord("ab" * 16, "01" * 8, "chat", attributes=attributes)
    buffer.add([span])
    gc.collect()
    assert not gc.is_tracked(attributes["gen_ai.response.finish_reasons"])
    assert not gc.is_tracked(span.attributes)
    (trace,) = buffer._traces.values()
    assert list(trace.selected) == ["01" * 8]
    assert not gc.is_tracked(trace.selected)
