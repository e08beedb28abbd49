"""Converting OTLP attributes to Python: `attributes_of`'s shortcut for non-empty strings gives
what dispatching on each value's kind gives, for every kind of value (the empty string and an
unset value included), and a span's record holds what its protobuf says."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from scorewatch.traces.spans import any_value, attributes_of, spans_from_request

pytestmark = pytest.mark.unit


def _by_kind(value: AnyValue) -> Any:
    """The oracle: the value read by its kind, for every attribute (no shortcut); an
    attribute's own array is a tuple (arrays nested in it are lists, as `any_value` reads)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(any_value(value))
    return any_value(value)


_scalars = st.one_of(
    st.text(max_size=8).map(lambda text: AnyValue(string_value=text)),
    st.just(AnyValue()),  # unset: reads as None, and its string_value as ""
    st.booleans().map(lambda flag: AnyValue(bool_value=flag)),
    st.integers(-(2**63), 2**63 - 1).map(lambda number: AnyValue(int_value=number)),
    st.floats(allow_nan=False).map(lambda number: AnyValue(double_value=number)),
    st.binary(max_size=6).map(lambda raw: AnyValue(bytes_value=raw)),
)


def _nest(children: st.SearchStrategy[AnyValue]) -> st.SearchStrategy[AnyValue]:
    def array(items: list[AnyValue]) -> AnyValue:
        value = AnyValue()
        value.array_value.values.extend(items)
        return value

    def kvlist(pairs: list[tuple[str, AnyValue]]) -> AnyValue:
        value = AnyValue()
        value.kvlist_value.values.extend(KeyValue(key=k, value=v) for k, v in pairs)
        return value

    return st.one_of(
        st.lists(children, max_size=3).map(array),
        st.lists(st.tuples(st.text(max_size=4), children), max_size=3).map(kvlist),
    )


_values = st.recursive(_scalars, _nest, max_leaves=8)
_pairs = st.lists(st.tuples(st.sampled_from(["a", "b", "gen_ai.x", ""]), _values), max_size=8)


@settings(max_examples=300, deadline=None)
@given(_pairs)
def test_attributes_read_as_their_kind_says(pairs: list[tuple[str, AnyValue]]) -> None:
    keyvalues = [KeyValue(key=key, value=value) for key, value in pairs]
    expected: dict[str, Any] = {}
    for pair in keyvalues:  # a repeated key keeps its last value
        expected[pair.key] = _by_kind(pair.value)
    assert attributes_of(keyvalues) == expected
    for key, value in attributes_of(keyvalues).items():
        assert type(value) is type(expected[key])  # "" stays "", False is not 0


@settings(max_examples=100, deadline=None)
@given(_pairs, st.lists(_pairs, max_size=2))
def test_a_span_record_holds_its_protobuf(
    pairs: list[tuple[str, AnyValue]], events: list[list[tuple[str, AnyValue]]]
) -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "chat"
    span.attributes.extend(KeyValue(key=key, value=value) for key, value in pairs)
    for number, event_pairs in enumerate(events):
        event = span.events.add(name=f"e{number}", time_unix_nano=number)
        event.attributes.extend(KeyValue(key=key, value=value) for key, value in event_pairs)
    (record,) = spans_from_request(request)
    assert record.attributes == {key: _by_kind(value) for key, value in pairs}
    assert [(e.name, e.time_ns, dict(e.attributes)) for e in record.events] == [
        (f"e{n}", n, {key: _by_kind(value) for key, value in event_pairs})
        for n, event_pairs in enumerate(events)
    ]
