"""The trace side's shortcuts give what the plain readings give: JSON attributes decoded as
`json.loads` decodes them, selectors matched as their conditions say, and a request offered to
the buffer refused or kept, and counted in its ledger, as counting span by span says."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorewatch.traces import BufferLimits, SpanRecord, SpanSelector, TraceBuffer
from scorewatch.traces.bounds import Owner
from scorewatch.traces.collect import Extraction, extract_ready
from scorewatch.traces.messages import from_json_text
from scorewatch.traces.run import ExtractedRun, Skipped, extract_run
from scorewatch.traces.select import selector_matcher
from scorewatch.traces.spans import UnsampledSpans

pytestmark = pytest.mark.unit

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def _loads(value: Any) -> Any:
    """The oracle of `from_json_text`: `json.loads` of text that starts as JSON text does."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
_texts = st.one_of(
    _json_values.map(json.dumps),
    st.tuples(
        _json_values.map(json.dumps), st.sampled_from(["", " ", "\n\t", " x", ",1", "]"])
    ).map("".join),
    st.text(alphabet='{}[]",: \t\n1ax\\', max_size=12),
    st.sampled_from(["[" * 5000, '"\\ud800"', "[1,]", "{}{}", '"a" "b"', "[1] \r\n"]),
)


@settings(max_examples=400, deadline=None)
@given(_texts)
def test_json_attributes_decode_as_json_loads_does(text: str) -> None:
    assert repr(from_json_text(text)) == repr(_loads(text))


_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(0, 3),
    st.sampled_from(["a", "b", "chat", "invoke_agent", "1"]),
    st.lists(st.sampled_from(["a", "b", 1, True]), max_size=3),
)
_selectors = st.builds(
    SpanSelector,
    operation=st.none() | st.lists(st.sampled_from(["chat", "invoke_agent"]), max_size=2),
    service=st.none() | st.lists(st.sampled_from(["svc", "other"]), max_size=2),
    name=st.none() | st.sampled_from(["ch.t", "ch", ".*agent"]),
    attributes=st.dictionaries(
        st.sampled_from(["k", "gen_ai.operation.name"]),
        st.sampled_from(["a", "b", 1, True, "chat"]),
        max_size=2,
    ),
)


def _matches(selector: SpanSelector, span: SpanRecord) -> bool:
    """The oracle: every condition the selector sets holds (a list attribute holds a value
    when it contains it; `true` is not 1)."""

    def equal(value: Any, want: Any) -> bool:
        if isinstance(value, list):
            return any(equal(item, want) for item in value)
        if isinstance(value, bool) or isinstance(want, bool):
            return type(value) is type(want) and value == want
        return value is not None and bool(value == want)

    attributes = span.attributes
    return (
        (
            selector.operation is None
            or attributes.get("gen_ai.operation.name") in selector.operation
        )
        and (selector.service is None or span.service_name in selector.service)
        and (selector.name is None or selector._pattern.fullmatch(span.name) is not None)  # type: ignore[union-attr]
        and all(equal(attributes.get(k), want) for k, want in selector.attributes.items())
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_selectors, max_size=4),
    st.dictionaries(st.sampled_from(["k", "gen_ai.operation.name", "x"]), _values, max_size=3),
    st.sampled_from(["chat", "invoke_agent", "work"]),
    st.sampled_from(["svc", "other", None]),
)
def test_selectors_match_as_their_conditions_say(
    selectors: list[SpanSelector], attributes: dict[str, Any], name: str, service: str | None
) -> None:
    resource = {"service.name": service} if service is not None else {}
    span = SpanRecord("t" * 32, "s" * 16, name, attributes=attributes, resource=resource)
    expected = next((s for s in selectors if _matches(s, span)), None)
    assert selector_matcher(selectors)(span) is expected
    assert [s.matches(span) for s in selectors] == [_matches(s, span) for s in selectors]


# Three resources, two of one service; each client address sends its own (one mapping per
# resource, shared by the requests of one address).
_RESOURCES = [{"service.name": "a"}, {"service.name": "b"}, {"service.name": "a", "x": 1}]
_SENT = {source: [dict(r) for r in _RESOURCES] for source in ("10.0.0.1", "10.0.0.2")}
_RESOURCE_SIZES = [50, 70, 90]

_span_parts = st.tuples(
    st.integers(0, 2), st.integers(0, 2), st.integers(0, 5), st.integers(1, 400)
)  # resource, trace, span id, size
_requests = st.tuples(
    st.sampled_from(["10.0.0.1", "10.0.0.2"]),
    st.lists(_span_parts, max_size=8),
    st.lists(_span_parts, max_size=4),  # unsampled, one group each
    st.booleans(),  # pop (flush) after it
)


def _owner(source: str, resource: dict[str, Any]) -> Owner:
    return (source, str(resource.get("service.name") or ""))


def _held(buffer: TraceBuffer) -> tuple[int, int, dict[Owner, tuple[int, int]]]:
    """The oracle of the ledger: bytes and traces held, in all and per owner, counted from
    what the buffer holds: each span's size, each resource once while any of its spans is."""
    per: dict[Owner, list[int]] = {}
    resources: dict[int, tuple[Owner, int]] = {}
    for (owner, _), trace in buffer._traces.items():
        held = per.setdefault(owner, [0, 0])
        held[1] += 1
        for span in trace.spans.values():
            held[0] += span.size
            resources[id(span.resource)] = (owner, span.resource_size)
    for (owner, _), unsampled in buffer._unsampled.items():
        held = per.setdefault(owner, [0, 0])
        held[1] += 1
        for resource, _spans, size in unsampled.held.values():
            held[0] += size
            resources[id(resource)] = (owner, _RESOURCE_SIZES[_RESOURCES.index(resource)])
    for owner, size in resources.values():
        per[owner][0] += size
    total = sum(held[0] for held in per.values())
    return total, len(buffer), {owner: (b, t) for owner, (b, t) in per.items()}


def _cost(
    buffer: TraceBuffer, source: str, spans: list[SpanRecord], unsampled: list[UnsampledSpans]
) -> dict[Owner, list[int]]:
    """The oracle of what a request would add, part by part: bytes and new traces per owner."""
    held_resources = {id(s.resource) for t in buffer._traces.values() for s in t.spans.values()}
    held_resources |= {key for t in buffer._unsampled.values() for key in t.held}
    costs: dict[Owner, list[int]] = {}
    seen_resources: set[int] = set()
    opened: set[tuple[Owner, str]] = set()
    parts: list[tuple[Any, int, dict[str, Any], int]] = [
        (s, s.size, dict(s.resource), s.resource_size) for s in spans
    ] + [(g, sum(g.sizes), dict(g.resource), g.resource_size) for g in unsampled]
    for part, size, _resource, resource_size in parts:
        owner = _owner(source, part.resource)
        cost = costs.setdefault(owner, [0, 0])
        cost[0] += size
        if id(part.resource) not in held_resources | seen_resources:
            seen_resources.add(id(part.resource))
            cost[0] += resource_size
        key = (owner, part.trace_id)
        if key not in opened and key not in buffer._traces and key not in buffer._unsampled:
            opened.add(key)
            cost[1] += 1
    return costs


@settings(max_examples=400, deadline=None)
@given(st.lists(_requests, min_size=1, max_size=8), st.integers(2, 8), st.integers(600, 4000))
def test_offers_are_refused_and_counted_as_span_by_span(
    requests: list[tuple[str, list[Any], list[Any], bool]], max_traces: int, max_bytes: int
) -> None:
    limits = BufferLimits(max_traces=max_traces, max_bytes=max(max_bytes, 1024))
    buffer = TraceBuffer(None, limits)
    for source, parts, unsampled_parts, pop in requests:
        spans = sorted(
            (
                SpanRecord(
                    f"{trace:032x}",
                    f"{span_id:016x}",
                    "work",
                    attributes={"gen_ai.operation.name": "chat"},
                    resource=_SENT[source][resource],
                    size=size,
                    resource_size=_RESOURCE_SIZES[resource],
                )
                for resource, trace, span_id, size in parts
            ),
            key=lambda s: _RESOURCES.index(s.resource),  # type: ignore[arg-type]
        )
        unsampled = [
            UnsampledSpans(
                f"{trace + 100:032x}",
                _SENT[source][resource],
                _RESOURCE_SIZES[resource],
                [span_id.to_bytes(8, "big")],
                [size],
            )
            for resource, trace, span_id, size in unsampled_parts
        ]
        costs = _cost(buffer, source, spans, unsampled)
        before = _held(buffer)
        bytes_before, traces_before, per_before = before
        dropped_before = sum(buffer.counts.spans_dropped.values())
        offer = buffer.offer(spans, source, unsampled)
        too_large = any(
            b > limits.client_bytes or t > limits.client_traces for b, t in costs.values()
        )
        over_share = any(
            per_before.get(o, (0, 0))[0] + b > limits.client_bytes
            or per_before.get(o, (0, 0))[1] + t > limits.client_traces
            for o, (b, t) in costs.items()
        )
        needed = [sum(c[0] for c in costs.values()), sum(c[1] for c in costs.values())]
        if too_large:
            assert offer.refused == "too_large"
        elif over_share:
            assert offer.refused == "client_share"
        elif bytes_before + needed[0] > limits.max_bytes:
            assert offer.refused == "max_bytes"
        elif traces_before + needed[1] > limits.max_traces:
            assert offer.refused == "max_traces"
        else:
            assert offer.refused is None
            dropped = sum(buffer.counts.spans_dropped.values()) - dropped_before
            assert offer.dropped == dropped
        if offer.refused is not None:
            assert _held(buffer) == before
        ledger = buffer._ledger
        total, traces, per = _held(buffer)
        assert (ledger.bytes, ledger.traces) == (total, traces)
        assert {o: ledger.held_by(o) for o in per} == per
        assert set(ledger._owners) == set(per)
        if pop:
            buffer.pop_ready(flush=True)
            assert (ledger.bytes, ledger.traces, ledger._owners) == (0, 0, {})


_KINDS: dict[str, dict[str, Any]] = {
    "agent": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
    "chat": {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Where is order 7?"}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Shipped."}]}]
        ),
    },
    "empty chat": {"gen_ai.operation.name": "chat"},
    "tool": {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.arguments": '{"id": 7}',
        "gen_ai.tool.call.result": '"shipped"',
    },
    "session": {"gen_ai.conversation.id": "c-1", "scorewatch.conversation.end": "true"},
}
# (kind, parent: an index among the spans before it or none, start) per span of one trace.
_trace_shapes = st.lists(
    st.tuples(st.sampled_from(sorted(_KINDS)), st.integers(-1, 12), st.integers(0, 3)),
    min_size=1,
    max_size=12,
)


def _trace(trace_id: str, shape: list[tuple[str, int, int]]) -> list[SpanRecord]:
    return [
        SpanRecord(
            trace_id,
            f"{number + 1:016x}",
            kind,
            parent_span_id=f"{parent + 1:016x}" if 0 <= parent < number else None,
            start_ns=start,
            end_ns=start + 1,
            attributes=dict(_KINDS[kind]),
        )
        for number, (kind, parent, start) in enumerate(shape)
    ]


@settings(max_examples=300, deadline=None)
@given(_trace_shapes, _trace_shapes, st.booleans(), st.randoms(use_true_random=False))
def test_runs_of_a_round_read_as_each_span_alone_reads(
    first: list[tuple[str, int, int]],
    second: list[tuple[str, int, int]],
    nested: bool,
    random: Any,
) -> None:
    """A round's selected spans of one trace share one span tree (`SpanTree`): every run and
    skip is what reading each span with its trace's spans alone gives (two traces, spans
    arriving in any order)."""
    spans = _trace(TRACE_ID, first) + _trace(TRACE_ID[::-1], second)
    random.shuffle(spans)
    selectors = [SpanSelector(operation=["invoke_agent", "chat"], nested=nested)]
    buffer = TraceBuffer(selectors)
    buffer.add(spans)
    ready = buffer.pop_ready(flush=True)
    extraction = Extraction()
    extract_ready(ready, extraction)
    alone = [extract_run(item.span, list(item.trace)) for item in ready]
    assert extraction.runs == [run for run in alone if isinstance(run, ExtractedRun)]
    assert extraction.skipped_spans == [run for run in alone if isinstance(run, Skipped)]
    assert len(alone) == len(ready)
