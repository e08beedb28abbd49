"""Spans as the rest of this package reads them: plain values, hex ids, nothing protobuf.

`spans_from_request` flattens an `ExportTraceServiceRequest` (resource → scope → span) into
`SpanRecord`s, each carrying its resource's attributes (one mapping shared by the spans of a
resource) and what they all weigh, so later stages never walk protobuf messages or care which
request a span came in.

A span's own attributes and its events' are converted when first read (`LazyAttributes`): most
spans of an agent's trace are never read past their ids and name (only the spans a selector
picks, and the calls under them, are), and converting every attribute of every span was most
of what receiving a span cost. Until then a record keeps its span's protobuf encoding, the bytes
the buffer counts for it anyway, never a reference into the request it came in (which would
keep the whole request in memory for as long as any one of its spans is held).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

__all__ = [
    "LazyAttributes",
    "SpanEvent",
    "SpanRecord",
    "any_value",
    "attributes_of",
    "spans_from_request",
]

_STATUS_ERROR = 2


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One span event: its name, time and attributes."""

    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One finished span. Ids are lowercase hex (32 and 16 digits), as OTLP JSON writes them;
    `parent_span_id` is None for a root span."""

    trace_id: str
    span_id: str
    name: str
    parent_span_id: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope: str = ""
    error: bool = False
    # Bytes of the span in its protobuf encoding, and of its scope's name: what the assembly
    # buffer counts against its memory bound for the span itself.
    size: int = 0
    # Bytes of the resource's attributes in their protobuf encoding. The spans of one resource
    # share its attributes (`resource` is one mapping): the buffer counts them once.
    resource_size: int = 0

    @property
    def service_name(self) -> str | None:
        name = self.resource.get("service.name")
        return name if isinstance(name, str) else None


def any_value(value: AnyValue) -> Any:
    """The Python value of an OTLP `AnyValue` (bytes become hex text, an unset value None)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None


def attributes_of(pairs: Any) -> dict[str, Any]:
    """A `KeyValue` list as a dict (a repeated key keeps its last value).

    Most attributes are strings: those are read inline, without `any_value`'s call per value
    (this runs for every attribute of every span received)."""
    converted: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        value = pair.value
        if value.WhichOneof("value") == "string_value":
            converted[pair.key] = value.string_value
        else:
            converted[pair.key] = any_value(value)
    return converted


# Different attributes a span is asked for one by one before it is converted whole: what the
# selectors of the known conventions ask of every span (an operation name, span kinds, a
# request type: four keys) stays within it.
_SCANS = 4


class _EncodedSpan:
    """One span's protobuf encoding. The first attributes looked up (selectors' questions)
    are found in the decoded span and only their values converted; reading a whole mapping,
    or many lookups, converts the span's attributes and its events', and lets the encoding and
    the decoded message go."""

    __slots__ = ("_converted", "_encoded", "_message", "_scanned")

    def __init__(self, encoded: bytes) -> None:
        self._encoded = encoded
        self._scanned: dict[object, tuple[bool, Any]] = {}
        self._message: Span | None = None
        self._converted: tuple[dict[str, Any], list[dict[str, Any]]] | None = None

    def _span(self) -> Span:
        if self._message is None:
            from opentelemetry.proto.trace.v1.trace_pb2 import Span

            self._message = Span.FromString(self._encoded)
            self._encoded = b""
        return self._message

    def attributes(self, event: int | None) -> dict[str, Any]:
        """The span's attributes (`event` None), or those of its event number `event`."""
        if self._converted is None:
            span = self._span()
            self._converted = (
                attributes_of(span.attributes),
                [attributes_of(one.attributes) for one in span.events],
            )
            self._message = None
            self._scanned = {}
        own, events = self._converted
        return own if event is None else events[event]

    def scan(self, key: object) -> tuple[bool, Any] | None:
        """Whether the span has attribute `key`, and its value (the last, if repeated), from
        the decoded span; None once `_SCANS` different keys were asked: a span asked that much
        is being read (its run extracted), and is better converted whole, once."""
        if self._converted is not None:
            return None
        scanned = self._scanned
        if key in scanned:
            return scanned[key]
        if len(scanned) >= _SCANS:
            return None
        found: AnyValue | None = None
        for pair in self._span().attributes:
            if pair.key == key:
                found = pair.value
        answer = scanned[key] = (False, None) if found is None else (True, any_value(found))
        return answer


class LazyAttributes(Mapping[str, Any]):
    """A span's (or one of its events') attributes, converted to Python values when first
    read; a read-only mapping like the dict it stands for."""

    __slots__ = ("_event", "_source", "_values")

    def __init__(self, source: _EncodedSpan, event: int | None = None) -> None:
        self._source: _EncodedSpan | None = source
        self._event = event
        self._values: dict[str, Any] | None = None

    @property
    def converted(self) -> bool:
        """Whether the values were read (and converted) already."""
        return self._values is not None

    def _converted(self) -> dict[str, Any]:
        values = self._values
        if values is None:
            assert self._source is not None
            values = self._values = self._source.attributes(self._event)
            self._source = None
        return values

    def _lookup(self, key: object) -> tuple[bool, Any]:
        values = self._values
        if values is None:
            source = self._source
            if self._event is None and source is not None:
                scanned = source.scan(key)
                if scanned is not None:
                    return scanned
            values = self._converted()
        return key in values, values.get(key)  # type: ignore[call-overload]

    def __getitem__(self, key: str) -> Any:
        values = self._values
        if values is not None:
            return values[key]
        found, value = self._lookup(key)
        if not found:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._converted())

    def __len__(self) -> int:
        return len(self._converted())

    def __contains__(self, key: object) -> bool:
        values = self._values
        return key in values if values is not None else self._lookup(key)[0]

    def get(self, key: str, default: Any = None) -> Any:
        values = self._values
        if values is not None:
            return values.get(key, default)
        found, value = self._lookup(key)
        return value if found else default

    def items(self) -> ItemsView[str, Any]:
        return self._converted().items()

    def __repr__(self) -> str:
        return repr(self._converted())


def spans_from_request(request: ExportTraceServiceRequest) -> Iterator[SpanRecord]:
    """Every span of the request, in the order the request lists them; their attributes are
    converted when first read (`LazyAttributes`)."""
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        resource_size = resource_spans.resource.ByteSize()
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            scope_size = len(scope.encode("utf-8"))
            for span in scope_spans.spans:
                encoded = span.SerializeToString()
                source = _EncodedSpan(encoded)
                yield SpanRecord(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex() or None,
                    name=span.name,
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes=LazyAttributes(source),
                    events=tuple(
                        SpanEvent(
                            name=event.name,
                            time_ns=event.time_unix_nano,
                            attributes=LazyAttributes(source, index),
                        )
                        for index, event in enumerate(span.events)
                    ),
                    resource=resource,
                    scope=scope,
                    error=span.status.code == _STATUS_ERROR,
                    size=len(encoded) + scope_size,
                    resource_size=resource_size,
                )
