"""Spans as the rest of this package reads them: plain values, hex ids, nothing protobuf.

`spans_from_request` flattens an `ExportTraceServiceRequest` (resource → scope → span) into
`SpanRecord`s, each carrying its resource's attributes (one mapping shared by the spans of a
resource) and what they all weigh, so later stages never walk protobuf messages or care which
request a span came in. `split_request` does the same for the traces a predicate on the trace id
keeps, and leaves the spans of the other traces as `UnsampledSpans`: their ids and sizes only,
what the trace buffer's bounds and duplicate check need (serve's intake, for traces no scorer
samples: converting a span costs many times its decoding).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = [
    "RequestSpans",
    "SpanEvent",
    "SpanRecord",
    "UnsampledSpans",
    "any_value",
    "attributes_of",
    "spans_from_request",
    "split_request",
]

_STATUS_ERROR = 2


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One span event: its name, time and attributes."""

    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(slots=True)
class SpanRecord:
    """One finished span. Ids are lowercase hex (32 and 16 digits), as OTLP JSON writes them;
    `parent_span_id` is None for a root span.

    Read-only by convention, not frozen: one is built per span received, and a frozen
    dataclass's `__init__` (a guarded `object.__setattr__` per field) costs twice a plain one's.
    It was never hashable (its attributes are a dict)."""

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
    # The kinds most attributes that are not text have first: counts, then lists (finish
    # reasons), whose items are mostly text, taken as `attributes_of` takes it.
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "array_value":
        return [item.string_value or any_value(item) for item in value.array_value.values]
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "kvlist_value":
        return _kvlist(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None


def _kvlist(pairs: Any) -> dict[str, Any]:
    """A `KeyValue` list nested in a value, as a dict: its arrays are lists, as `any_value`
    reads them (only an attribute's own array is a tuple, see `attributes_of`)."""
    converted: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        value = pair.value
        text = value.string_value
        converted[pair.key] = text if text else any_value(value)
    return converted


def attributes_of(pairs: Any) -> dict[str, Any]:
    """A `KeyValue` list as a dict (a repeated key keeps its last value). An attribute whose
    value is an array holds it as a tuple; arrays nested in it are lists, as `any_value` reads
    them.

    Most attributes are strings: a non-empty `string_value` is one (an unset field reads as
    ""), taken without asking `WhichOneof` or calling `any_value`; anything else, the empty
    string included, goes through `any_value` (this runs for every attribute of every span
    received, and the shortcut is a quarter of its cost).

    Why a tuple: the trace buffer holds every span of a trace for `linger_s` after its runs
    are scored, and the cyclic collector walks every container it tracks on each full
    collection. A list is always tracked, and so is the dict holding it; a tuple of texts
    and numbers, and then the attribute dict, are untracked by the collector's first pass
    over them (a model span's `gen_ai.response.finish_reasons` is the common case): a third
    fewer objects for a full collection to walk with the buffer at a client's share. Readers
    that decode an attribute (`messages.from_json_text`) see the list it was."""
    converted: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        value = pair.value
        text = value.string_value
        if text:
            converted[pair.key] = text
        else:
            found = any_value(value)
            converted[pair.key] = tuple(found) if type(found) is list else found
    return converted


@dataclass(slots=True)
class UnsampledSpans:
    """The spans of one trace and one resource of a request, not converted: their raw span ids
    in request order, and what each weighs as a `SpanRecord.size` would say."""

    trace_id: str
    """Lowercase hex, as `SpanRecord.trace_id`."""
    resource: Mapping[str, Any]
    """The resource's attributes: the same mapping as its converted spans'."""
    resource_size: int
    span_ids: list[bytes] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)

    @property
    def service_name(self) -> str | None:
        name = self.resource.get("service.name")
        return name if isinstance(name, str) else None


@dataclass(slots=True)
class RequestSpans:
    """One request's spans, as `split_request` leaves them: converted (`spans`), not converted
    (`unsampled`, per trace and resource), and `ignored` (of the scope asked to ignore)."""

    spans: list[SpanRecord] = field(default_factory=list)
    unsampled: list[UnsampledSpans] = field(default_factory=list)
    ignored: int = 0

    @property
    def unsampled_count(self) -> int:
        return sum(len(group.span_ids) for group in self.unsampled)


def split_request(
    request: ExportTraceServiceRequest,
    keep: Callable[[bytes], bool],
    *,
    ignore_scope: str | None = None,
) -> RequestSpans:
    """The request's spans: those of traces `keep` (asked once per raw trace id) keeps as
    `SpanRecord`s, the others as `UnsampledSpans`; spans of the scope named `ignore_scope` are
    only counted (`ignored`)."""
    found = RequestSpans()
    # Per raw trace id: its hex id when kept (converted once per trace, not per span), False
    # when not.
    kept: dict[bytes, str | Literal[False]] = {}
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        resource_size = resource_spans.resource.ByteSize()
        groups: dict[bytes, UnsampledSpans] = {}
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            if ignore_scope is not None and scope == ignore_scope:
                found.ignored += len(scope_spans.spans)
                continue
            scope_size = len(scope.encode("utf-8"))
            for span in scope_spans.spans:
                trace_id = span.trace_id
                hex_id = kept.get(trace_id)
                if hex_id is None:
                    hex_id = kept[trace_id] = trace_id.hex() if keep(trace_id) else False
                if hex_id is not False:
                    found.spans.append(
                        _record(span, hex_id, resource, resource_size, scope, scope_size)
                    )
                    continue
                group = groups.get(trace_id)
                if group is None:
                    group = groups[trace_id] = UnsampledSpans(
                        trace_id.hex(), resource, resource_size
                    )
                    found.unsampled.append(group)
                group.span_ids.append(span.span_id)
                group.sizes.append(span.ByteSize() + scope_size)
    return found


def _record(
    span: Any,
    trace_id: str,
    resource: Mapping[str, Any],
    resource_size: int,
    scope: str,
    scope_size: int,
) -> SpanRecord:
    # By position, each field read once: this runs for every span of a sampled trace.
    # `trace_id`: the span's, in hex (the caller has read it).
    events = span.events
    return SpanRecord(
        trace_id,
        span.span_id.hex(),
        span.name,
        span.parent_span_id.hex() or None,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        attributes_of(span.attributes),
        tuple(
            SpanEvent(event.name, event.time_unix_nano, attributes_of(event.attributes))
            for event in events
        )
        if events
        else (),
        resource,
        scope,
        span.status.code == _STATUS_ERROR,
        span.ByteSize() + scope_size,
        resource_size,
    )


def spans_from_request(request: ExportTraceServiceRequest) -> Iterator[SpanRecord]:
    """Every span of the request, in the order the request lists them."""
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        resource_size = resource_spans.resource.ByteSize()
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            scope_size = len(scope.encode("utf-8"))
            for span in scope_spans.spans:
                yield _record(span, span.trace_id.hex(), resource, resource_size, scope, scope_size)
