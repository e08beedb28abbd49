"""Putting traces back together from spans that arrive in pieces, within fixed bounds.

Spans of one trace come in several export requests and in any order (a child's batch may land
after its parent's). `TraceBuffer` keeps partial traces and hands out a selected span once its
subtree can be taken as complete: the span itself has arrived (so it has ended) and nothing has
arrived under it for `quiet_period_s`. Activity elsewhere in the trace (a long conversation kept
in one trace) does not hold it back. A span that is skipped when nested (a model call inside a
selected agent) also waits, up to `parent_wait_s` more, for its missing ancestors: an agent's
span is exported only when the agent ends, well after its first model calls.

Memory is bounded: at most `max_traces` traces of at most `max_spans_per_trace` spans and at
most `max_bytes` of spans (their protobuf size) in all, each trace kept at most `max_age_s`; a
trace with nothing left to hand out is dropped after `linger_s` without new spans (late spans
of a parent may still need it). Every span or trace dropped on a bound is counted by reason.

Pure data structure: no I/O, no threads, no event loop; time comes from the injected clock.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .conventions import DEFAULT_SELECTORS
from .select import SpanSelector, matching_selector
from .spans import SpanRecord

__all__ = ["BufferCounts", "BufferLimits", "ReadySpan", "TraceBuffer"]


class BufferLimits(BaseModel):
    """The bounds and timings of the buffer (the `[traces]` table's assembly settings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_traces: int = Field(default=10_000, ge=1)
    max_spans_per_trace: int = Field(default=2_000, ge=1)
    max_bytes: int = Field(
        default=64 << 20, ge=1024, description="Spans held in all, by their protobuf size."
    )
    max_age_s: float = Field(default=600.0, gt=0)
    quiet_period_s: float = Field(default=5.0, ge=0)
    linger_s: float = Field(default=30.0, ge=0)
    parent_wait_s: float = Field(default=60.0, ge=0)

    @model_validator(mode="after")
    def _completes_before_expiry(self) -> BufferLimits:
        # A span waits up to quiet_period_s + parent_wait_s before it is handed out; a trace
        # expiring sooner would lose every span that waits that long.
        if self.max_age_s <= self.quiet_period_s + self.parent_wait_s:
            raise ValueError(
                f"max_age_s ({self.max_age_s:g}) must be greater than quiet_period_s + "
                f"parent_wait_s ({self.quiet_period_s + self.parent_wait_s:g})"
            )
        return self


@dataclass(slots=True)
class BufferCounts:
    """What happened to what arrived. Eviction reasons: `max_traces` (the oldest trace made room
    for a new one), `max_age` (a trace still incomplete after `max_age_s`); span drop reasons:
    `max_spans_per_trace`, `max_bytes` (the buffer holds `max_bytes` already), `duplicate` (a
    span id seen before in its trace). `max_age` also
    ends a trace that never stops receiving spans. `lost_selected`
    counts the selected spans that evictions took before they were handed out."""

    spans_received: int = 0
    spans_dropped: Counter[str] = field(default_factory=Counter)
    traces_evicted: Counter[str] = field(default_factory=Counter)
    lost_selected: Counter[str] = field(default_factory=Counter)
    nested_skipped: int = 0
    ready: int = 0
    traces_completed: int = 0


@dataclass(frozen=True, slots=True)
class ReadySpan:
    """A selected span whose subtree is complete, with the spans of its trace held so far."""

    span: SpanRecord
    trace: tuple[SpanRecord, ...]


@dataclass(slots=True)
class _Trace:
    first_seen: float
    last_arrival: float
    spans: dict[str, SpanRecord] = field(default_factory=dict)
    # selected span id -> [last arrival in its subtree, whether a selected ancestor skips it]
    pending: dict[str, list[Any]] = field(default_factory=dict)


class TraceBuffer:
    """Partial traces, bounded; `add` spans as they arrive, `pop_ready` the runs to score."""

    def __init__(
        self,
        selectors: Sequence[SpanSelector] | None = None,
        limits: BufferLimits | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.selectors = tuple(selectors) if selectors else DEFAULT_SELECTORS
        self.limits = limits or BufferLimits()
        self.counts = BufferCounts()
        self._clock = clock
        self._traces: OrderedDict[str, _Trace] = OrderedDict()  # oldest first
        self._span_total = 0
        self._bytes_total = 0

    def __len__(self) -> int:
        return len(self._traces)

    @property
    def spans_held(self) -> int:
        return self._span_total

    @property
    def bytes_held(self) -> int:
        return self._bytes_total

    def add(self, spans: Iterable[SpanRecord]) -> int:
        """Keep the spans; returns how many of them were dropped (counted by reason)."""
        now = self._clock()
        dropped = 0
        for span in spans:
            if not self._add_one(span, now):
                dropped += 1
        return dropped

    def _add_one(self, span: SpanRecord, now: float) -> bool:
        self.counts.spans_received += 1
        if self._bytes_total + span.size > self.limits.max_bytes:
            # New spans are refused rather than old traces evicted: what is held completes and
            # is scored, and the sender is told what was refused.
            self.counts.spans_dropped["max_bytes"] += 1
            return False
        trace = self._traces.get(span.trace_id)
        if trace is None:
            while len(self._traces) >= self.limits.max_traces:
                self._evict(next(iter(self._traces)), "max_traces")
            trace = self._traces[span.trace_id] = _Trace(first_seen=now, last_arrival=now)
        if span.span_id in trace.spans:
            self.counts.spans_dropped["duplicate"] += 1
            return False
        if len(trace.spans) >= self.limits.max_spans_per_trace:
            self.counts.spans_dropped["max_spans_per_trace"] += 1
            return False
        trace.spans[span.span_id] = span
        trace.last_arrival = now
        self._span_total += 1
        self._bytes_total += span.size
        selector = matching_selector(span, self.selectors)
        if selector is not None:
            trace.pending[span.span_id] = [now, not selector.nested]
        if trace.pending:
            self._touch_ancestors(trace, span, now)
        return True

    @staticmethod
    def _touch_ancestors(trace: _Trace, span: SpanRecord, now: float) -> None:
        """A span arrived under its ancestors: their subtrees are not quiet yet."""
        seen = {span.span_id}
        parent_id = span.parent_span_id
        while parent_id is not None and parent_id not in seen:
            seen.add(parent_id)
            waiting = trace.pending.get(parent_id)
            if waiting is not None:
                waiting[0] = now
            parent = trace.spans.get(parent_id)
            if parent is None:
                return
            parent_id = parent.parent_span_id

    def _evict(self, trace_id: str, reason: str) -> None:
        trace = self._traces.pop(trace_id)
        self._forget(trace)
        self.counts.traces_evicted[reason] += 1
        if trace.pending:
            self.counts.lost_selected[reason] += len(trace.pending)

    def _retire(self, trace_id: str) -> None:
        trace = self._traces.pop(trace_id)
        self._forget(trace)
        self.counts.traces_completed += 1

    def _forget(self, trace: _Trace) -> None:
        self._span_total -= len(trace.spans)
        self._bytes_total -= sum(span.size for span in trace.spans.values())

    def pop_ready(self, *, flush: bool = False) -> list[ReadySpan]:
        """Selected spans now complete, oldest trace first; with `flush`, every selected span
        held (the end of a batch: nothing more will arrive). Expired traces are evicted first."""
        now = self._clock()
        limits = self.limits
        ready: list[ReadySpan] = []
        for trace_id in list(self._traces):
            trace = self._traces[trace_id]
            if trace.pending:
                ready.extend(self._hand_out(trace, now, flush))
            if not flush and now - trace.first_seen >= limits.max_age_s:
                self._evict(trace_id, "max_age")
            elif not trace.pending and (flush or now - trace.last_arrival >= limits.linger_s):
                self._retire(trace_id)
        self.counts.ready += len(ready)
        return ready

    def _hand_out(self, trace: _Trace, now: float, flush: bool) -> list[ReadySpan]:
        limits = self.limits
        out = []
        snapshot: tuple[SpanRecord, ...] | None = None
        for span_id, (last, skip_nested) in list(trace.pending.items()):
            waited = now - last
            if not flush and waited < limits.quiet_period_s:
                continue
            span = trace.spans[span_id]
            if skip_nested:
                ancestry = self._ancestry(trace, span)
                if ancestry == "selected":
                    del trace.pending[span_id]
                    self.counts.nested_skipped += 1
                    continue
                if (
                    ancestry == "missing"
                    and not flush
                    and waited < limits.quiet_period_s + limits.parent_wait_s
                ):
                    continue
            del trace.pending[span_id]
            if snapshot is None:
                snapshot = tuple(trace.spans.values())
            out.append(ReadySpan(span=span, trace=snapshot))
        return out

    def _ancestry(self, trace: _Trace, span: SpanRecord) -> str:
        """`selected` (an ancestor is selected), `root` (every ancestor is here, none selected)
        or `missing` (an ancestor has not arrived)."""
        seen = {span.span_id}
        parent_id = span.parent_span_id
        while parent_id is not None and parent_id not in seen:
            seen.add(parent_id)
            parent = trace.spans.get(parent_id)
            if parent is None:
                return "missing"
            if matching_selector(parent, self.selectors) is not None:
                return "selected"
            parent_id = parent.parent_span_id
        return "root"
