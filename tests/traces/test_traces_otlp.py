"""Reading OTLP trace data: OTLP/JSON with hex ids, protobuf, Collector `file` exporter files
(plain and gzipped), and hostile input rejected with an error that says where."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from scorewatch.traces import (
    INVALID_TRACE_DATA,
    TraceDataError,
    extract_runs,
    parse_json,
    parse_protobuf,
    read_file_exporter,
    requests_from,
    spans_from_request,
)
from traces_support import otlp_json

pytestmark = pytest.mark.unit


def _spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with (
        tracer.start_as_current_span("parent", attributes={"n": 1, "tags": ["a", "b"]}),
        tracer.start_as_current_span("child") as child,
    ):
        child.add_event("note", {"ok": True, "ratio": 0.5})
    return list(exporter.get_finished_spans())


def test_otlp_json_hex_ids_read_as_the_protobuf_encoding() -> None:
    spans = _spans()
    from_json = list(spans_from_request(parse_json(otlp_json(spans))))
    from_proto = list(spans_from_request(parse_protobuf(encode_spans(spans).SerializeToString())))
    assert from_json == from_proto
    child = next(s for s in from_json if s.name == "child")
    parent = next(s for s in from_json if s.name == "parent")
    context = spans[0].get_span_context()
    assert context is not None
    assert child.trace_id == f"{context.trace_id:032x}" and len(child.span_id) == 16
    assert child.parent_span_id == parent.span_id and parent.parent_span_id is None
    assert parent.attributes == {"n": 1, "tags": ("a", "b")}  # an array attribute: a tuple
    assert child.events[0].attributes == {"ok": True, "ratio": 0.5}


def test_base64_ids_are_read_too() -> None:
    # protobuf's own JSON mapping writes bytes as base64; the lengths never collide with hex.
    spans = _spans()
    canonical = json.dumps(MessageToDict(encode_spans(spans)))
    assert list(spans_from_request(parse_json(canonical))) == list(
        spans_from_request(parse_json(otlp_json(spans)))
    )


def _file_lines(spans: list[ReadableSpan]) -> str:
    metrics_line = json.dumps({"resourceMetrics": []})
    return "\n".join([otlp_json(spans[:1]), metrics_line, "", otlp_json(spans[1:])]) + "\n"


@pytest.mark.parametrize("compressed", [False, True])
def test_collector_file_exporter_format(tmp_path: Path, compressed: bool) -> None:
    spans = _spans()
    path = tmp_path / ("traces.jsonl.gz" if compressed else "traces.jsonl")
    data = _file_lines(spans).encode()
    path.write_bytes(gzip.compress(data) if compressed else data)
    requests = list(read_file_exporter(path))
    assert len(requests) == 2  # the metrics line is not a trace request
    names = [s.name for r in requests for s in spans_from_request(r)]
    assert names == [s.name for s in spans]
    assert len(list(requests_from([path, str(path)]))) == 4


def test_a_malformed_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(otlp_json(_spans()) + "\n{not json\n")
    with pytest.raises(TraceDataError) as caught:
        list(read_file_exporter(path))
    assert caught.value.code == INVALID_TRACE_DATA
    assert f"{path}:2: not JSON" in caught.value.message


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("[1, 2]", "an export request is a JSON object"),
        ('{"resourceSpans": 5}', "not an OTLP trace export request"),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz" , "spanId": "x"}]}]}]}',
            "traceId must be 32 hex digits, got 2 characters",
        ),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "' + "g" * 32 + '"}]}]}]}',
            "is not hex",
        ),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
            "OTLP",
        ),
    ],
)
def test_malformed_json_is_a_clear_error(document: str, problem: str) -> None:
    with pytest.raises(TraceDataError) as caught:
        parse_json(document)
    assert problem in caught.value.message


def test_hostile_nesting_is_an_error_or_plain_text() -> None:
    with pytest.raises(TraceDataError, match="JSON nested too deeply"):
        parse_json("[" * 100_000 + "]" * 100_000)
    deep = "[" * 100_000 + "]" * 100_000
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": deep}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": deep}},
    ]
    span = {"traceId": "1" * 32, "spanId": "2" * 16, "name": "chat", "attributes": attributes}
    document = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    extraction = extract_runs(document)
    assert extraction.runs == [] and extraction.skipped == {"no_content": 1}
    nested = '{"content": ' * 900 + '"x"' + "}" * 900
    parts = json.dumps([{"role": "user", "content": json.loads(nested)}])
    attributes[1]["value"] = {"stringValue": parts}
    document = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    assert extract_runs(document).skipped == {"no_content": 1}


def test_unknown_fields_are_ignored_as_otlp_requires() -> None:
    request = parse_json('{"resourceSpans": [], "futureField": {"x": 1}}')
    assert list(request.resource_spans) == []


def test_garbage_protobuf_and_bad_file_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceDataError, match="not an OTLP protobuf trace request"):
        parse_protobuf(b"\xff\xff\xff\xff")
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(b"x" * 100)[:20])
    with pytest.raises(TraceDataError, match="cannot read"):
        list(read_file_exporter(broken))
    with pytest.raises(TraceDataError, match="not UTF-8"):
        list(requests_from(b"\xff\xfe{"))
    with pytest.raises(TypeError, match="trace data is"):
        list(requests_from([42]))  # type: ignore[list-item]
