"""The trace buffer: spans in pieces and out of order, completion after a quiet period, bounds
on traces, spans and age, every drop counted. Time comes from a test clock."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import pytest
from pydantic import ValidationError

from scorewatch.traces import (
    BufferLimits,
    ExtractedRun,
    SpanRecord,
    SpanSelector,
    TraceBuffer,
    extract_run,
)

pytestmark = pytest.mark.unit

TRACE = "0af7651916cd43dd8448eb211c80319c"


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def span(
    span_id: int,
    parent: int | None = None,
    *,
    trace: str = TRACE,
    start: int = 0,
    **attributes: Any,
) -> SpanRecord:
    values = {k.replace("__", "."): v for k, v in attributes.items()}
    return SpanRecord(
        trace_id=trace,
        span_id=f"{span_id:016x}",
        parent_span_id=f"{parent:016x}" if parent is not None else None,
        name=str(values.get("gen_ai.operation.name", "work")),
        start_ns=start,
        end_ns=start + 1,
        attributes=values,
        resource={"service.name": "svc"},
    )


def agent(span_id: int, **extra: Any) -> SpanRecord:
    return span(
        span_id,
        **{
            "gen_ai__operation__name": "invoke_agent",
            "gen_ai__output__messages": '[{"role": "assistant", "parts": '
            '[{"type": "text", "content": "done"}]}]',
        },
        **extra,
    )


def tool(span_id: int, parent: int, name: str, start: int) -> SpanRecord:
    return span(
        span_id,
        parent,
        start=start,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name=name,
        gen_ai__tool__call__result='"ok"',
    )


LIMITS = BufferLimits(quiet_period_s=2, linger_s=10, max_age_s=60, parent_wait_s=40)


def test_spans_split_across_requests_and_out_of_order_make_one_run() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=LIMITS, clock=clock)
    buffer.add([tool(3, 1, "second", start=30)])  # a child's batch lands first
    buffer.add([agent(1)])
    clock.now += 1.5
    buffer.add([tool(2, 1, "first", start=20)])  # a late batch: the agent is not complete yet
    clock.now += 1.5
    assert buffer.pop_ready() == []  # 1.5 s since the last span: still within the quiet period
    clock.now += 0.5
    (ready,) = buffer.pop_ready()
    assert ready.span.span_id == f"{1:016x}"
    run = extract_run(ready.span, ready.trace)
    assert not isinstance(run, type(None))
    assert run.tool_calls == ["first", "second"]
    assert buffer.pop_ready() == []  # handed out once
    assert buffer.counts.ready == 1 and buffer.counts.spans_received == 3


def test_a_finished_trace_lingers_for_a_late_parent_then_is_retired() -> None:
    clock = Clock()
    buffer = TraceBuffer([SpanSelector(operation=["invoke_agent"])], LIMITS, clock=clock)
    buffer.add([tool(2, 1, "lookup", start=5)])
    clock.now += 5
    assert buffer.pop_ready() == [] and len(buffer) == 1  # nothing selected yet, kept
    buffer.add([agent(1)])  # the parent arrives after its child's trace went quiet
    clock.now += 2
    (ready,) = buffer.pop_ready()
    assert [s.span_id for s in ready.trace] == [f"{2:016x}", f"{1:016x}"]
    clock.now += 10
    assert buffer.pop_ready() == [] and len(buffer) == 0 and buffer.spans_held == 0
    assert buffer.counts.traces_completed == 1 and buffer.counts.traces_evicted == Counter()


def test_a_trace_that_never_completes_is_evicted_and_counted() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=LIMITS, clock=clock)
    buffer.add([agent(1)])
    for index in range(2, 62):  # a span every second: never quiet for 2 s, until 60 s old
        clock.now += 1
        buffer.add([span(index, 1, start=index)])
        assert buffer.pop_ready() == []
    assert len(buffer) == 0 and buffer.spans_held == 0
    buffer.add([span(99, 1)])  # a straggler starts a new partial trace, the agent is gone
    assert len(buffer) == 1 and buffer.pop_ready(flush=True) == []
    assert buffer.counts.traces_evicted == Counter({"max_age": 1})
    assert buffer.counts.lost_selected == Counter({"max_age": 1})


def test_a_flood_stays_within_bounds_and_every_drop_is_counted() -> None:
    clock = Clock()
    limits = BufferLimits(max_traces=50, max_spans_per_trace=20, quiet_period_s=2)
    buffer = TraceBuffer(limits=limits, clock=clock)
    peak = 0
    for trace_index in range(1000):
        trace = f"{trace_index + 1:032x}"
        buffer.add([span(i + 1, trace=trace) for i in range(30)])
        buffer.add([agent(99, trace=trace)])
        peak = max(peak, buffer.spans_held)
    assert len(buffer) == 50 and peak <= 50 * 20
    counts = buffer.counts
    assert counts.spans_received == 1000 * 31
    assert counts.spans_dropped == Counter({"max_spans_per_trace": 1000 * 11})
    assert counts.traces_evicted == Counter({"max_traces": 950})
    # The agent span of each trace came after its 20 allowed spans: never selected, never lost.
    assert counts.lost_selected == Counter()
    clock.now += 2
    assert buffer.pop_ready() == []


def test_evicting_for_room_counts_the_selected_spans_lost() -> None:
    buffer = TraceBuffer(limits=BufferLimits(max_traces=2), clock=Clock())
    for index in range(5):
        buffer.add([agent(1, trace=f"{index + 1:032x}")])
    assert buffer.counts.traces_evicted == Counter({"max_traces": 3})
    assert buffer.counts.lost_selected == Counter({"max_traces": 3})
    assert [r.span.trace_id for r in buffer.pop_ready(flush=True)] == [f"{4:032x}", f"{5:032x}"]


def test_a_repeated_span_is_counted_once() -> None:
    buffer = TraceBuffer(limits=LIMITS, clock=Clock())
    buffer.add([agent(1), agent(1)])
    buffer.add([agent(1)])  # an exporter retry
    assert buffer.counts.spans_dropped == Counter({"duplicate": 2})
    assert len(buffer.pop_ready(flush=True)) == 1


def test_nested_selected_spans_are_skipped_unless_asked() -> None:
    chat = span(2, 1, gen_ai__operation__name="chat")
    default = TraceBuffer(limits=LIMITS, clock=Clock())
    default.add([chat, agent(1)])
    assert [r.span.name for r in default.pop_ready(flush=True)] == ["invoke_agent"]
    assert default.counts.nested_skipped == 1
    both = TraceBuffer(
        [SpanSelector(operation=["invoke_agent"]), SpanSelector(operation=["chat"], nested=True)],
        LIMITS,
        clock=Clock(),
    )
    both.add([chat, agent(1)])
    assert sorted(r.span.name for r in both.pop_ready(flush=True)) == ["chat", "invoke_agent"]


def test_selectors() -> None:
    record = span(1, gen_ai__operation__name="chat", retries=3, flagged=True, tags=["a", "b"])
    assert SpanSelector(operation=["chat", "invoke_agent"]).matches(record)
    assert not SpanSelector(operation=["invoke_agent"]).matches(record)
    assert SpanSelector(service=["svc"]).matches(record)
    assert not SpanSelector(service=["other"]).matches(record)
    assert SpanSelector(name="ch.t").matches(record)
    assert not SpanSelector(name="ch").matches(record)  # the whole name must match
    assert SpanSelector(attributes={"retries": 3, "flagged": True, "tags": "b"}).matches(record)
    assert not SpanSelector(attributes={"retries": True}).matches(record)
    assert not SpanSelector(attributes={"flagged": 1}).matches(record)
    assert not SpanSelector(attributes={"retries": "3"}).matches(record)
    assert not SpanSelector(operation=["chat"], service=["other"]).matches(record)


def test_selector_is_the_toml_table_shape() -> None:
    table = {"operation": ["invoke_agent"], "name": "invoke_agent .*", "attributes": {"a": 1}}
    assert SpanSelector.model_validate(table).operation == ["invoke_agent"]
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        SpanSelector(name="(")
    with pytest.raises(ValidationError, match="Extra inputs"):
        SpanSelector.model_validate({"operations": ["chat"]})
    with pytest.raises(ValidationError):
        BufferLimits(max_traces=0)


def test_a_quiet_subtree_is_ready_while_the_rest_of_its_trace_is_busy() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=LIMITS, clock=clock)
    buffer.add([agent(1), tool(2, 1, "lookup", start=1)])
    for index in range(10, 20):  # another part of the trace keeps busy
        clock.now += 1
        buffer.add([span(index, 5, start=index)])
        ready = buffer.pop_ready()
        if clock.now - 1000 < 2:
            assert ready == []
        elif ready:
            break
    assert [r.span.span_id for r in ready] == [f"{1:016x}"]
    assert clock.now == 1002


def test_a_model_call_waits_for_the_agent_span_that_ends_after_it() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=LIMITS, clock=clock)  # default selectors: agents and chats
    buffer.add([span(2, 1, start=5, gen_ai__operation__name="chat")])
    clock.now += 30  # quiet long ago, but its parent (the agent, still running) is missing
    assert buffer.pop_ready() == []
    buffer.add([agent(1)])
    clock.now += 2
    assert [r.span.name for r in buffer.pop_ready()] == ["invoke_agent"]
    assert buffer.counts.nested_skipped == 1


def test_a_model_call_whose_parent_never_comes_is_scored_after_the_wait() -> None:
    clock = Clock()
    limits = BufferLimits(quiet_period_s=2, parent_wait_s=20)
    buffer = TraceBuffer(limits=limits, clock=clock)
    buffer.add([span(2, 1, start=5, gen_ai__operation__name="chat")])
    clock.now += limits.quiet_period_s + limits.parent_wait_s - 1
    assert buffer.pop_ready() == []
    clock.now += 1
    assert [r.span.name for r in buffer.pop_ready()] == ["chat"]


def test_a_buffer_at_its_byte_bound_refuses_new_spans_and_counts_them() -> None:
    limits = BufferLimits(max_bytes=4096)
    buffer = TraceBuffer(limits=limits, clock=Clock())
    big = [replace(span(i + 1, trace=f"{i + 1:032x}"), size=1000) for i in range(10)]
    assert buffer.add(big) == 6  # four fit
    assert buffer.bytes_held == 4000 and buffer.spans_held == 4
    assert buffer.counts.spans_dropped == Counter({"max_bytes": 6})
    buffer.pop_ready(flush=True)
    assert buffer.bytes_held == 0  # retired traces give their bytes back
    assert buffer.add(big[:2]) == 0


def test_limits_refuse_an_expiry_sooner_than_a_span_may_wait() -> None:
    with pytest.raises(ValidationError, match="max_age_s"):
        BufferLimits(max_age_s=30, quiet_period_s=5, parent_wait_s=25)
    assert BufferLimits(max_age_s=31, quiet_period_s=5, parent_wait_s=25).max_age_s == 31


# -- serve's offers: whole requests, per client, within shares ------------------------------------


def test_a_resource_is_counted_once_while_any_of_its_spans_is_held() -> None:
    resource = {"service.name": "svc", "blob": "x" * 5000}
    spans = [
        replace(span(i + 1, trace=f"{i + 1:032x}"), resource=resource, resource_size=5000, size=100)
        for i in range(3)
    ]
    clock = Clock()
    buffer = TraceBuffer(limits=LIMITS, clock=clock)
    assert buffer.offer(spans[:2], "10.0.0.1").refused is None
    assert buffer.bytes_held == 5000 + 2 * 100
    assert buffer.offer(spans[2:], "10.0.0.1").refused is None  # the same mapping: counted once
    assert buffer.bytes_held == 5000 + 3 * 100
    clock.now += LIMITS.linger_s
    buffer.pop_ready()
    assert buffer.bytes_held == 0 and len(buffer) == 0


def test_offers_are_kept_whole_or_refused_whole_within_a_clients_share() -> None:
    limits = BufferLimits(max_bytes=10_000, max_traces=20, client_share=0.5)
    buffer = TraceBuffer(limits=limits, clock=Clock())

    def request(first: int, count: int, service: str, size: int = 1000) -> list[SpanRecord]:
        resource = {"service.name": service}
        return [
            replace(span(1, trace=f"{first + i:032x}"), size=size, resource=resource)
            for i in range(count)
        ]

    assert buffer.offer(request(1, 4, "a"), "10.0.0.1").refused is None
    refused = buffer.offer(request(10, 2, "a"), "10.0.0.1")  # 6,000 bytes: past its 5,000
    assert refused.refused == "client_share" and refused.retry_later
    assert buffer.bytes_held == 4000 and buffer.spans_held == 4  # nothing of it kept
    # Another client (another service, or another address) has its own share.
    assert buffer.offer(request(20, 4, "b"), "10.0.0.1").refused is None
    full = buffer.offer(request(30, 3, "a"), "10.0.0.2")
    assert full.refused == "max_bytes" and full.retry_later  # 8,000 held, 3,000 more: past all
    never = buffer.offer(request(40, 1, "c", size=6000), "10.0.0.3")
    assert never.refused == "too_large" and not never.retry_later
    assert "client_share" in never.message
    many = buffer.offer(request(50, 11, "d", size=10), "10.0.0.4")  # 11 traces, 10 allowed
    assert many.refused == "too_large" and "max_traces" in many.message
    assert buffer.counts.requests_refused == Counter(
        {"client_share": 1, "max_bytes": 1, "too_large": 2}
    )
    assert buffer.counts.spans_received == 8  # refused requests are sent again: not counted
    assert buffer.counts.traces_evicted == Counter()  # nothing is evicted to make room


def _runs(first: int, count: int, service: str = "a") -> list[SpanRecord]:
    """`count` whole traces (an agent span, its root, and a tool call under it), one client's."""
    resource = {"service.name": service}
    spans = []
    for index in range(first, first + count):
        trace = f"{index:032x}"
        spans += [
            replace(tool(2, 1, "lookup", start=2), trace_id=trace, resource=resource),
            replace(agent(1), trace_id=trace, resource=resource),
        ]
    return spans


SHARED = BufferLimits(
    max_traces=20, client_share=0.5, quiet_period_s=2, parent_wait_s=5, linger_s=30
)


def test_a_clients_complete_traces_make_room_for_its_new_ones() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=SHARED, clock=clock)
    assert buffer.offer(_runs(0, 10), "10.0.0.1").refused is None  # its whole share
    clock.now += 2
    assert len(buffer.pop_ready()) == 10  # scored: complete, lingering for late spans
    assert len(buffer) == 10 and buffer.counts.traces_completed == 0
    # Before, this waited out linger_s (429 all along); the two oldest complete traces go.
    assert buffer.offer(_runs(10, 2), "10.0.0.1").refused is None
    assert len(buffer) == 10 and buffer.counts.traces_completed == 2
    assert buffer.counts.traces_evicted == Counter() and buffer.counts.lost_selected == Counter()
    # The oldest went: a retry of a newer one is still told apart as sent twice.
    assert buffer.offer(_runs(9, 1), "10.0.0.1").dropped == 2
    assert buffer.offer(_runs(0, 1), "10.0.0.1").refused is None  # a new trace again
    clock.now += 2
    assert len(buffer.pop_ready()) == 3  # the two new runs and the one sent again
    # Spans of the oldest complete trace (3: 0, 1 went for 10, 11, then 2 for 0) and a new
    # one: letting 3 go means the request opens it again, so one more goes.
    assert buffer.offer(_runs(3, 1) + _runs(20, 1), "10.0.0.1").refused is None
    assert len(buffer) == 10


def test_complete_traces_are_let_go_only_for_their_own_clients_requests() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=SHARED, clock=clock)
    assert buffer.offer(_runs(0, 10, "b"), "10.0.0.2").refused is None
    clock.now += 2
    assert len(buffer.pop_ready()) == 10  # b's traces: complete
    waiting = _runs(10, 10)
    assert buffer.offer(waiting, "10.0.0.1").refused is None  # a's: not handed out yet
    # a's share and the buffer are full: a's traces are not complete, b's are not a's.
    assert buffer.offer(_runs(20, 1), "10.0.0.1").refused == "client_share"
    assert buffer.offer(_runs(30, 1, "c"), "10.0.0.3").refused == "max_traces"
    assert len(buffer) == 20 and buffer.counts.traces_completed == 0


def test_a_trace_still_missing_a_parent_lingers_whole() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=SHARED, clock=clock)
    resource = {"service.name": "a"}
    # Agent spans under a root that has not arrived (a framework's request span ends last).
    spans = [
        replace(agent(2, parent=1), trace_id=f"{index:032x}", resource=resource)
        for index in range(10)
    ]
    assert buffer.offer(spans, "10.0.0.1").refused is None
    clock.now += SHARED.quiet_period_s + SHARED.parent_wait_s  # its parent never came
    assert len(buffer.pop_ready()) == 10  # handed out, but the traces are not whole
    assert buffer.offer(_runs(10, 1), "10.0.0.1").refused == "client_share"
    roots = [replace(span(1), trace_id=f"{index:032x}", resource=resource) for index in (0, 1)]
    assert buffer.offer(roots, "10.0.0.1").refused is None  # late roots: no trace opened
    # Whole now, but a span came after they were handed out: they linger their full linger_s.
    assert buffer.offer(_runs(10, 1), "10.0.0.1").refused == "client_share"
    clock.now += SHARED.linger_s
    buffer.pop_ready()
    assert len(buffer) == 0 and buffer.counts.traces_completed == 10


def test_a_steady_client_is_never_refused_and_holds_at_most_its_share() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=SHARED, clock=clock)
    most = 0
    for second in range(200):  # 3 traces a second, held 30 s each: 90 > its 10
        assert buffer.offer(_runs(3 * second, 3), "10.0.0.1").refused is None
        clock.now += 1
        buffer.pop_ready()
        most = max(most, len(buffer))
    assert most <= SHARED.client_traces
    buffer.pop_ready(flush=True)
    assert buffer.counts.ready == 600 and buffer.counts.requests_refused == Counter()


def test_another_clients_spans_never_replace_join_or_nest_a_run() -> None:
    clock = Clock()
    buffer = TraceBuffer(limits=LIMITS, clock=clock)
    forged = [
        span(  # the victim's span id, sent first, saying something else
            2,
            1,
            gen_ai__operation__name="invoke_agent",
            gen_ai__output__messages='[{"role": "assistant", "parts": '
            '[{"type": "text", "content": "forged"}]}]',
        ),
        agent(1),  # a selected "root" above the victim's agent
        tool(9, 2, "transfer_funds", start=9),  # a child under the victim's agent
    ]
    assert buffer.offer(forged, "10.6.6.6").refused is None
    victim = [span(1), agent(2, parent=1), tool(3, 2, "lookup_order", start=3)]
    offer = buffer.offer(victim, "10.0.0.1")
    assert offer.refused is None and offer.dropped == 0  # nothing taken as a duplicate
    assert buffer.offer(victim[1:2], "10.0.0.1").dropped == 1  # its own retry is
    for index in range(10):  # the other client keeps sending under the victim's agent
        clock.now += 0.5
        buffer.offer([tool(100 + index, 2, "noise", start=100)], "10.6.6.6")
    ready = buffer.pop_ready()  # the victim's agent is quiet all the same
    (mine,) = [r for r in ready if r.trace[0].name == "work"]  # its trace starts at its root
    assert mine.span.span_id == f"{2:016x}"
    run = extract_run(mine.span, mine.trace)
    assert isinstance(run, ExtractedRun)
    assert run.tool_calls == ["lookup_order"]
    assert run.output[0]["content"]["content"] == "done"


def _lines_run(work: Any) -> int:
    """Lines of assembly.py executed by `work()`: a measure of its work that no clock sways."""
    import sys

    from scorewatch.traces import assembly

    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename != assembly.__file__:
            return None
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(None)
    return count


def test_assembly_is_linear_in_the_spans_of_long_chains() -> None:
    def chain(length: int) -> int:
        limits = BufferLimits(max_spans_per_trace=10_000, quiet_period_s=0, linger_s=0)
        buffer = TraceBuffer(limits=limits, clock=Clock())
        spans = [agent(1)] + [span(i, i - 1) for i in range(2, length + 1)]
        chats = [span(length + i, length, gen_ai__operation__name="chat") for i in (1, 2, 3)]

        def work() -> None:
            buffer.offer(spans, "10.0.0.1")
            buffer.offer(chats, "10.0.0.1")  # nested far below the agent
            assert len(buffer.pop_ready()) == 1 and buffer.counts.nested_skipped == 3

        return _lines_run(work)

    small, large = chain(500), chain(2000)
    assert large < 5 * small, (small, large)  # four times the spans: about four times the work
