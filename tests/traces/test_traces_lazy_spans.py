"""Received spans keep their attributes encoded until something reads them: the values read
are those an eager conversion gives, and assembling and extracting runs reads only the spans
the runs are made of."""

from __future__ import annotations

import pytest

from scorewatch.traces.assembly import TraceBuffer
from scorewatch.traces.collect import Extraction, extract_ready
from scorewatch.traces.spans import LazyAttributes, attributes_of, spans_from_request
from traces_support import order_agent_spans, protobuf_request

pytestmark = pytest.mark.integration


def test_lazy_attributes_read_as_the_eager_conversion() -> None:
    request = protobuf_request(order_agent_spans(2))
    first = request.resource_spans[0].scope_spans[0].spans[0]
    for index in range(2):  # events with attributes of every kind
        event = first.events.add(name=f"event-{index}", time_unix_nano=index)
        for key, field, value in (("text", "string_value", "hi"), ("n", "int_value", index)):
            pair = event.attributes.add(key=key)
            setattr(pair.value, field, value)
        pair = event.attributes.add(key="list")
        pair.value.array_value.values.add(double_value=0.5)
    for text in ("first", "second"):  # a repeated key keeps its last value, as a dict would
        first.attributes.add(key="dup").value.string_value = text
    records = list(spans_from_request(request))
    assert records[0].attributes.get("dup") == "second" and "dup" in records[0].attributes
    assert records[0].attributes["dup"] == "second"
    assert not records[0].attributes.converted  # looked up in the decoded span
    messages = [
        (span, len(scope_spans.scope.name.encode()))
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]
    assert len(records) == len(messages) > 0
    for record, (span, scope_size) in zip(records, messages, strict=True):
        assert isinstance(record.attributes, LazyAttributes)
        assert not record.attributes.converted
        assert record.size == span.ByteSize() + scope_size
        assert dict(record.attributes) == attributes_of(span.attributes)
        assert record.attributes == attributes_of(span.attributes)
        events = [attributes_of(event.attributes) for event in span.events]
        assert [dict(event.attributes) for event in record.events] == events
    assert any(record.events for record in records)


def test_assembly_and_extraction_read_only_the_spans_of_runs() -> None:
    # Two runs of the agent among spans of another service that no selector picks.
    request = protobuf_request(order_agent_spans(2))
    other = request.resource_spans.add()
    other.resource.attributes.add(key="service.name").value.string_value = "web"
    scope_spans = other.scope_spans.add()
    for index in range(5):
        span = scope_spans.spans.add(
            trace_id=bytes([9] * 16), span_id=bytes([index + 1] * 8), name=f"GET /{index}"
        )
        span.attributes.add(key="http.method").value.string_value = "GET"
    records = list(spans_from_request(request))
    buffer = TraceBuffer()
    assert buffer.offer(records, "10.0.0.1").refused is None
    extraction = Extraction()
    extract_ready(buffer.pop_ready(flush=True), extraction)
    assert len(extraction.runs) == 2
    web = [record for record in records if record.service_name == "web"]
    assert len(web) == 5
    assert not any(record.attributes.converted for record in web)
    # What the selectors asked is answered again without converting the span.
    assert web[0].attributes.get("gen_ai.operation.name") is None
    assert "openinference.span.kind" not in web[0].attributes
    assert not web[0].attributes.converted
    assert dict(web[0].attributes) == {"http.method": "GET"}
    assert web[0].attributes.converted
