"""Reading OTLP trace data: protobuf and JSON export requests, and Collector `file` exporter files.

OTLP JSON differs from protobuf's canonical JSON mapping in one way that matters here: trace and
span ids are hex strings, not base64 (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding).
The ids are rewritten to base64 before `json_format` parses the rest, so one message type serves
both encodings. A hex id and a base64 id of the same field never have the same length (32 vs 24
characters for a trace id, 16 vs 12 for a span id), so base64 ids are accepted too.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ..errors import ScorewatchError

__all__ = [
    "INVALID_TRACE_DATA",
    "TraceData",
    "TraceDataError",
    "parse_json",
    "parse_protobuf",
    "read_file_exporter",
    "requests_from",
]

INVALID_TRACE_DATA = "INVALID_TRACE_DATA"

TraceData = ExportTraceServiceRequest | bytes | str | Path
"""What batch readers take: a parsed request, JSON text or bytes, or a file path."""

_ID_LENGTHS = {"traceId": (32, 24), "spanId": (16, 12), "parentSpanId": (16, 12)}
_GZIP_MAGIC = b"\x1f\x8b"


class TraceDataError(ScorewatchError):
    """Trace data that cannot be read: bad JSON, bad protobuf, a bad id. Says where."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, code=INVALID_TRACE_DATA, domain="TRACES", details=details)


def _id_as_base64(key: str, value: Any, where: str) -> Any:
    if not isinstance(value, str) or not value:
        return value
    hex_length, base64_length = _ID_LENGTHS[key]
    if len(value) == hex_length:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raise TraceDataError(
                f"{where}: {key} {value[:40]!r} is not hex", details={"field": key}
            ) from None
        return base64.b64encode(raw).decode("ascii")
    if len(value) == base64_length:
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error:
            pass
        else:
            return value
    raise TraceDataError(
        f"{where}: {key} must be {hex_length} hex digits, got {len(value)} characters",
        details={"field": key},
    )


def _rewrite_ids(document: Any, where: str) -> None:
    """Hex ids of spans and links to base64, in place. Other shapes are left for the parser."""
    if not isinstance(document, dict):
        raise TraceDataError(f"{where}: an export request is a JSON object")
    for resource_spans in _list(document.get("resourceSpans", document.get("resource_spans"))):
        for scope_spans in _list(
            _get(resource_spans, "scopeSpans", "scope_spans", "instrumentationLibrarySpans")
        ):
            for span in _list(_get(scope_spans, "spans")):
                _rewrite_record(span, where)
                for link in _list(_get(span, "links")):
                    _rewrite_record(link, where)


def _get(record: Any, *keys: str) -> Any:
    if isinstance(record, dict):
        for key in keys:
            if key in record:
                return record[key]
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _rewrite_record(record: Any, where: str) -> None:
    if not isinstance(record, dict):
        return
    for key, snake in (
        ("traceId", "trace_id"),
        ("spanId", "span_id"),
        ("parentSpanId", "parent_span_id"),
    ):
        for name in (key, snake):
            if name in record:
                record[name] = _id_as_base64(key, record[name], where)


def parse_json(data: bytes | str, *, where: str = "request") -> ExportTraceServiceRequest:
    """An OTLP/JSON export request. Unknown fields are ignored, as the OTLP spec requires."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise TraceDataError(f"{where}: not JSON: {error}") from None
    except RecursionError:
        raise TraceDataError(f"{where}: JSON nested too deeply") from None
    _rewrite_ids(document, where)
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as error:
        raise TraceDataError(f"{where}: not an OTLP trace export request: {error}") from None
    return request


def parse_protobuf(data: bytes, *, where: str = "request") -> ExportTraceServiceRequest:
    """An OTLP/protobuf export request."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as error:
        raise TraceDataError(f"{where}: not an OTLP protobuf trace request: {error}") from None
    return request


def _open_text(path: Path) -> Iterator[bytes]:
    try:
        with path.open("rb") as probe:
            gzipped = probe.read(2) == _GZIP_MAGIC
    except OSError as error:
        raise TraceDataError(f"{path}: cannot open: {error.strerror or error}") from None
    opener = gzip.open if gzipped else open
    try:
        with opener(path, "rb") as handle:
            yield from handle
    except (OSError, EOFError, zlib.error) as error:
        raise TraceDataError(f"{path}: cannot read: {error}") from None


def read_file_exporter(
    path: str | Path, *, errors: list[TraceDataError] | None = None
) -> Iterator[ExportTraceServiceRequest]:
    """The trace export requests of a Collector `file` exporter file (JSON, one request per line,
    gzip-compressed or not). Blank lines and lines holding only metrics or logs are skipped.

    A line that is not an export request raises `TraceDataError` naming the file and line; with
    an `errors` list, it is appended there instead and reading goes on (a file that cannot be
    opened or decompressed further ends there, after the lines read so far)."""
    path = Path(path)
    try:
        for number, line in enumerate(_open_text(path), start=1):
            if not line.strip():
                continue
            try:
                request = parse_json(line, where=f"{path}:{number}")
            except TraceDataError as error:
                if errors is None:
                    raise
                errors.append(error)
                continue
            if request.resource_spans:
                yield request
    except TraceDataError as error:
        if errors is None:
            raise
        errors.append(error)


def _documents(text: bytes | str) -> Iterator[ExportTraceServiceRequest]:
    """One JSON document, or (when the whole does not parse) one document per line."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TraceDataError(f"document: not UTF-8 text: {error}") from None
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        yield parse_json(text, where="document")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            request = parse_json(line, where=f"document line {number}")
            if request.resource_spans:
                yield request


def requests_from(data: TraceData | Iterable[TraceData]) -> Iterator[ExportTraceServiceRequest]:
    """Export requests from any mix of parsed requests, OTLP JSON (bytes, or text starting with
    `{`; one request, or one per line) and `file` exporter files (a `Path`, or any other text)."""
    if isinstance(data, ExportTraceServiceRequest | bytes | str | Path):
        items: Iterable[TraceData] = [data]
    else:
        items = data
    for item in items:
        if isinstance(item, ExportTraceServiceRequest):
            yield item
        elif isinstance(item, bytes) or (isinstance(item, str) and item.lstrip().startswith("{")):
            yield from _documents(item)
        elif isinstance(item, str | Path):
            yield from read_file_exporter(item)
        else:
            raise TypeError(
                "trace data is an ExportTraceServiceRequest, OTLP JSON text or bytes, or a file "
                f"path, got {type(item).__name__}"
            )
