"""Putting traces back together from spans that arrive in pieces, within fixed bounds.

Spans of one trace come in several export requests and in any order (a child's batch may land
after its parent's). `TraceBuffer` keeps partial traces and hands out a selected span once its
subtree can be taken as complete: the span itself has arrived (so it has ended) and nothing has
arrived under it for `quiet_period_s`. Activity elsewhere in the trace (a long conversation kept
in one trace) does not hold it back. A span that is skipped when nested (a model call inside a
selected agent) also waits, up to `parent_wait_s` more, for its missing ancestors: an agent's
span is exported only when the agent ends, well after its first model calls.

Spans are held per owner (`bounds.Owner`): serve's intake `offer`s each export request with
the address it came from, and the spans of one trace from two owners make two partial traces
that never meet. So a span another client sends never replaces one already received, never
joins another client's run as its child, and never makes one look nested. The batch reader
`add`s spans of one owner.

Serve's intake offers the spans of traces no scorer samples unconverted (`UnsampledSpans`):
such a trace is held as its span ids only, which is what refuses a span sent twice or past
`max_spans_per_trace` as before; it counts against the same bounds, by the same sizes, and is
let go as any trace with nothing to hand out.

Memory is bounded (see `bounds`): at most `max_traces` traces of at most `max_spans_per_trace`
spans and at most `max_bytes` in all, each trace kept at most `max_age_s`; a trace with nothing
left to hand out is dropped after `linger_s` without new spans (late spans of a parent may
still need it). A complete trace (whole: its root and every parent arrived; everything handed
out; nothing new since) is dropped sooner when a request of its owner would pass a bound: it
was scored, and refusing new spans for it made a client sending faster than its share over
`linger_s` wait out `linger_s` with 429s. Every span or trace dropped on a bound is counted by
reason.

The work is linear in the spans: a span's arrival is passed up its ancestors only as far as
one not yet told of this moment, and whether a span is nested is worked out once per span and
round. Pure data structure: no I/O, no threads, no event loop; time comes from the injected
clock; one thread at a time uses it.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .bounds import ANYONE, BufferLimits, Held, Ledger, Offer, Owner, Refusal
from .conventions import DEFAULT_SELECTORS
from .select import SpanSelector, selector_matcher
from .spans import SpanRecord, UnsampledSpans

__all__ = ["BufferCounts", "BufferLimits", "Offer", "ReadySpan", "TraceBuffer"]

Ancestry = Literal["selected", "root", "missing"]

# The refusals that letting go of the owner's complete traces can avoid.
_ROOM: frozenset[Refusal | None] = frozenset({"client_share", "max_bytes", "max_traces"})


@dataclass(slots=True)
class BufferCounts:
    """What happened to what arrived. Eviction reasons: `max_traces` (the oldest trace made room
    for a new one, in batch), `max_age` (a trace still incomplete after `max_age_s`); span drop
    reasons: `max_spans_per_trace`, `max_bytes` (in batch, the buffer holds `max_bytes`
    already), `duplicate` (a span id its owner sent before in its trace). `max_age` also ends a
    trace that never stops receiving spans. `lost_selected` counts the selected spans that
    evictions took before they were handed out. `requests_refused` counts the requests offered
    and refused whole, by reason (`bounds.Refusal`); their spans are not counted as received.
    `spans_unsampled` counts the spans kept as ids only (`UnsampledSpans`, not duplicates)."""

    spans_received: int = 0
    spans_dropped: Counter[str] = field(default_factory=Counter)
    traces_evicted: Counter[str] = field(default_factory=Counter)
    lost_selected: Counter[str] = field(default_factory=Counter)
    requests_refused: Counter[str] = field(default_factory=Counter)
    nested_skipped: int = 0
    spans_unsampled: int = 0
    ready: int = 0
    traces_completed: int = 0


@dataclass(frozen=True, slots=True)
class ReadySpan:
    """A selected span whose subtree is complete, with the spans of its trace held so far (its
    owner's, in serve)."""

    span: SpanRecord
    trace: tuple[SpanRecord, ...]


@dataclass(slots=True)
class _Trace:
    owner: Owner
    first_seen: float
    last_arrival: float
    spans: dict[str, SpanRecord] = field(default_factory=dict)
    # Per span: the latest arrival in its subtree, as far as the parent links held reach.
    latest: dict[str, float] = field(default_factory=dict)
    # Selected span id -> whether it is skipped under a selected ancestor (`nested = false`).
    pending: dict[str, bool] = field(default_factory=dict)
    # Every span id a selector matched, handed out or not: what `_ancestry` asks of an
    # ancestor (selectors are matched once per span, when it arrives). A dict of None, not a
    # set: a set is always tracked by the cyclic collector, a dict of texts is not, and a held
    # trace's containers are what a full collection walks (kept for `linger_s` after scoring).
    selected: dict[str, None] = field(default_factory=dict)
    # Parent ids that held spans name and that have not arrived; None when there are none
    # (the trace is whole: its root and every parent link are here).
    awaited: set[str] | None = None
    # In `TraceBuffer._complete`: whole, everything handed out, nothing new since.
    complete: bool = False


@dataclass(slots=True)
class _Unsampled:
    """A trace no scorer samples: its span ids, and what its spans hold per resource (the
    resource, spans, bytes) for the ledger. It has nothing to hand out: it is let go once
    quiet for `linger_s` (ended by `max_age_s` when it never is)."""

    owner: Owner
    first_seen: float
    last_arrival: float
    span_ids: set[bytes] = field(default_factory=set)
    held: dict[int, tuple[Mapping[str, Any], int, int]] = field(default_factory=dict)


class TraceBuffer:
    """Partial traces, bounded; `add` or `offer` spans as they arrive, `pop_ready` the runs to
    score."""

    def __init__(
        self,
        selectors: Sequence[SpanSelector] | None = None,
        limits: BufferLimits | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.selectors = tuple(selectors) if selectors else DEFAULT_SELECTORS
        self._select = selector_matcher(self.selectors)
        self.limits = limits or BufferLimits()
        self.counts = BufferCounts()
        self._clock = clock
        self._traces: OrderedDict[tuple[Owner, str], _Trace] = OrderedDict()  # oldest first
        self._unsampled: OrderedDict[tuple[Owner, str], _Unsampled] = OrderedDict()
        self._ledger = Ledger(self.limits)
        self._span_total = 0
        # Per owner, its complete traces in the order they completed: what it may let go of,
        # before `linger_s` is over, to keep a new request of its own (`_make_room`).
        self._complete: dict[Owner, OrderedDict[tuple[Owner, str], None]] = {}

    def __len__(self) -> int:
        return len(self._traces) + len(self._unsampled)

    @property
    def spans_held(self) -> int:
        return self._span_total

    @property
    def bytes_held(self) -> int:
        """Bytes held: the spans', and their resources' once each (see `bounds`)."""
        return self._ledger.bytes

    def add(self, spans: Iterable[SpanRecord]) -> int:
        """Keep the spans, as one owner's (the batch reader's); returns how many of them were
        dropped (counted by reason). A new trace past `max_traces` evicts the oldest; a span
        past `max_bytes` is dropped."""
        now = self._clock()
        dropped = 0
        for span in spans:
            self.counts.spans_received += 1
            if self._ledger.bytes + self._ledger.span_cost(span) > self.limits.max_bytes:
                # New spans are refused rather than old traces evicted: what is held completes
                # and is scored, and the caller is told what was refused.
                self.counts.spans_dropped["max_bytes"] += 1
                dropped += 1
                continue
            if (ANYONE, span.trace_id) not in self._traces:
                while len(self._traces) >= self.limits.max_traces:
                    self._evict(next(iter(self._traces)), "max_traces")
            if self._keep(span, ANYONE, now):
                self._ledger.hold(span, ANYONE)
            else:
                dropped += 1
        return dropped

    def offer(
        self,
        spans: Sequence[SpanRecord],
        source: str,
        unsampled: Sequence[UnsampledSpans] = (),
    ) -> Offer:
        """Keep one export request's spans, sent from `source` (an address), all of them or
        none: refused whole when a client in it would pass its share or the buffer its bounds
        (nothing is evicted to make room). Each span's owner is (`source`, its service name).
        `unsampled`: the request's spans of traces no scorer samples, kept as ids only."""

        owners: dict[int, Owner] = {}  # by id() of the resource, alive while its spans are

        def owner_of(span: SpanRecord | UnsampledSpans) -> Owner:
            # service.name is the resource's: one owner per resource, asked twice per span.
            key = id(span.resource)
            owner = owners.get(key)
            if owner is None:
                owner = owners[key] = (source, span.service_name or "")
            return owner

        def opens_trace(owner: Owner, trace_id: str) -> bool:
            key = (owner, trace_id)
            return key not in self._traces and key not in self._unsampled

        costs = self._ledger.costs(spans, owner_of, opens_trace, unsampled)
        refusal = self._ledger.refusal(costs)
        if refusal is not None and refusal.refused in _ROOM:
            # A trace let go that this request holds spans of is opened again by it.
            touched = {(owner_of(s), s.trace_id) for s in spans}
            touched.update((owner_of(group), group.trace_id) for group in unsampled)
            if self._make_room(costs, touched):
                refusal = self._ledger.refusal(
                    self._ledger.costs(spans, owner_of, opens_trace, unsampled)
                )
        if refusal is not None:
            self.counts.requests_refused[refusal.refused or ""] += 1
            return refusal
        now = self._clock()
        self.counts.spans_received += len(spans)
        dropped = 0
        resource: Mapping[str, Any] | None = None
        owner: Owner = ANYONE
        # What the kept spans hold, counted in the ledger once per resource and owner at the
        # end (the same sums as a count per span; nothing reads the ledger in between).
        held: dict[tuple[int, Owner], list[Any]] = {}
        tally: list[Any] = []
        for span in spans:
            if span.resource is not resource:
                resource = span.resource
                owner = owner_of(span)
                tally = held.setdefault((id(resource), owner), [span, owner, 0, 0])
            if self._keep(span, owner, now):
                tally[2] += span.size
                tally[3] += 1
            else:
                dropped += 1
        for first, owner, size, kept in held.values():
            if kept:
                self._ledger.hold_size(first.resource, first.resource_size, size, owner, kept)
        for group in unsampled:
            self.counts.spans_received += len(group.span_ids)
            dropped += self._keep_unsampled(group, owner_of(group), now)
        return Offer(dropped=dropped)

    def _keep_unsampled(self, group: UnsampledSpans, owner: Owner, now: float) -> int:
        """Keep the ids of a group's spans; returns how many were dropped (counted)."""
        key = (owner, group.trace_id)
        trace = self._unsampled.get(key)
        if trace is not None and now - trace.first_seen >= self.limits.max_age_s:
            # A trace that never stops receiving spans ends at max_age, as a sampled one does
            # (found here rather than by a round: the rounds look only at quiet ones).
            self.counts.traces_evicted["max_age"] += 1
            self._forget_unsampled(key)
            trace = None
        if trace is None:
            trace = self._unsampled[key] = _Unsampled(owner, first_seen=now, last_arrival=now)
            self._ledger.open_trace(owner)
        ids = trace.span_ids
        limit = self.limits.max_spans_per_trace
        dropped = self.counts.spans_dropped
        kept = size = 0
        for span_id, span_size in zip(group.span_ids, group.sizes, strict=True):
            if span_id in ids:
                dropped["duplicate"] += 1
            elif len(ids) >= limit:
                dropped["max_spans_per_trace"] += 1
            else:
                ids.add(span_id)
                kept += 1
                size += span_size
        if kept:
            trace.last_arrival = now
            self._unsampled.move_to_end(key)  # kept in order of their latest arrival
            resource = group.resource
            _, spans, held = trace.held.get(id(resource), (resource, 0, 0))
            trace.held[id(resource)] = (resource, spans + kept, held + size)
            self._ledger.hold_size(resource, group.resource_size, size, owner, kept)
            self._span_total += kept
            self.counts.spans_unsampled += kept
        return len(group.span_ids) - kept

    def _keep(self, span: SpanRecord, owner: Owner, now: float) -> bool:
        key = (owner, span.trace_id)
        trace = self._traces.get(key)
        if trace is None:
            trace = self._traces[key] = _Trace(owner, first_seen=now, last_arrival=now)
            self._ledger.open_trace(owner)
        if span.span_id in trace.spans:
            self.counts.spans_dropped["duplicate"] += 1
            return False
        if len(trace.spans) >= self.limits.max_spans_per_trace:
            self.counts.spans_dropped["max_spans_per_trace"] += 1
            return False
        spans = trace.spans
        spans[span.span_id] = span
        trace.last_arrival = now
        self._span_total += 1
        awaited = trace.awaited
        if awaited is not None and span.span_id in awaited:
            awaited.discard(span.span_id)
            if not awaited:
                trace.awaited = None
        parent_id = span.parent_span_id
        if parent_id is not None and parent_id not in spans:
            if trace.awaited is None:
                trace.awaited = set()
            trace.awaited.add(parent_id)
        if trace.complete:  # a late span: the trace lingers its full `linger_s` again
            self._incomplete(key, trace)
        selector = self._select(span)
        if selector is not None:
            trace.pending[span.span_id] = not selector.nested
            trace.selected[span.span_id] = None
        self._arrived(trace, span, now)
        return True

    @staticmethod
    def _arrived(trace: _Trace, span: SpanRecord, now: float) -> None:
        """A span arrived under its ancestors: their subtrees are not quiet yet.

        The walk up stops at the first ancestor already told of `now` (the clock never goes
        back): its own ancestors were told with it. So the spans of one request pass each
        ancestor up once, whatever the depth, and a cycle of parent links ends the walk."""
        latest = trace.latest
        latest[span.span_id] = now
        parent_id = span.parent_span_id
        while parent_id is not None:
            parent = trace.spans.get(parent_id)
            if parent is None or latest[parent_id] >= now:
                return
            latest[parent_id] = now
            parent_id = parent.parent_span_id

    def _evict(self, key: tuple[Owner, str], reason: str) -> None:
        trace = self._traces.pop(key)
        self._forget(key, trace)
        self.counts.traces_evicted[reason] += 1
        if trace.pending:
            self.counts.lost_selected[reason] += len(trace.pending)

    def _retire(self, key: tuple[Owner, str]) -> None:
        trace = self._traces.pop(key)
        self._forget(key, trace)
        self.counts.traces_completed += 1

    def _incomplete(self, key: tuple[Owner, str], trace: _Trace) -> None:
        trace.complete = False
        complete = self._complete[trace.owner]
        del complete[key]
        if not complete:
            del self._complete[trace.owner]

    def _make_room(self, costs: Mapping[Owner, Held], touched: set[tuple[Owner, str]]) -> bool:
        """Let go of complete traces of the request's owners, each its own and oldest first,
        while the request would pass its owner's share or the buffer's bounds; returns whether
        any was. A complete trace has been scored already: what it is kept for is a late span
        (rare once it is whole) and telling a span sent twice, not worth refusing new work."""
        ledger = self._ledger
        let_go = False
        for owner, cost in costs.items():
            complete = self._complete.get(owner)
            while complete and (
                ledger.over_share(owner, cost) or ledger.over_total(costs) is not None
            ):
                key = next(iter(complete))
                self._retire(key)
                cost.traces += key in touched
                complete = self._complete.get(owner)
                let_go = True
        return let_go

    def _forget(self, key: tuple[Owner, str], trace: _Trace) -> None:
        if trace.complete:
            self._incomplete(key, trace)
        self._span_total -= len(trace.spans)
        # Let go per resource (the spans of a trace mostly share one): the same sums as a
        # release per span.
        freed: dict[int, list[Any]] = {}
        for span in trace.spans.values():
            tally = freed.get(id(span.resource))
            if tally is None:
                freed[id(span.resource)] = [span.resource, span.size, 1]
            else:
                tally[1] += span.size
                tally[2] += 1
        for resource, size, count in freed.values():
            self._ledger.release_size(resource, size, trace.owner, count)
        self._ledger.close_trace(trace.owner)

    def pop_ready(self, *, flush: bool = False) -> list[ReadySpan]:
        """Selected spans now complete, oldest trace first; with `flush`, every selected span
        held (the end of a batch: nothing more will arrive). Expired traces are evicted first."""
        now = self._clock()
        limits = self.limits
        ready: list[ReadySpan] = []
        for key in list(self._traces):
            trace = self._traces[key]
            if trace.pending:
                ready.extend(self._hand_out(trace, now, flush))
                if not trace.pending and trace.awaited is None and not flush:
                    trace.complete = True
                    self._complete.setdefault(trace.owner, OrderedDict())[key] = None
            if not flush and now - trace.first_seen >= limits.max_age_s:
                self._evict(key, "max_age")
            elif not trace.pending and (flush or now - trace.last_arrival >= limits.linger_s):
                self._retire(key)
        # Traces no scorer samples, least recently added to first: the first one not quiet
        # for `linger_s` ends the look, so a round costs the traces it lets go.
        while self._unsampled:
            key, unsampled = next(iter(self._unsampled.items()))
            if not flush and now - unsampled.last_arrival < limits.linger_s:
                break
            if not flush and now - unsampled.first_seen >= limits.max_age_s:
                self.counts.traces_evicted["max_age"] += 1
            else:
                self.counts.traces_completed += 1
            self._forget_unsampled(key)
        self.counts.ready += len(ready)
        return ready

    def _forget_unsampled(self, key: tuple[Owner, str]) -> None:
        trace = self._unsampled.pop(key)
        self._span_total -= len(trace.span_ids)
        for resource, spans, size in trace.held.values():
            self._ledger.release_size(resource, size, trace.owner, spans)
        self._ledger.close_trace(trace.owner)

    def _hand_out(self, trace: _Trace, now: float, flush: bool) -> list[ReadySpan]:
        limits = self.limits
        out = []
        snapshot: tuple[SpanRecord, ...] | None = None
        above: dict[str, Ancestry] = {}  # this round's answers of `_ancestry`, shared
        for span_id, skip_nested in list(trace.pending.items()):
            waited = now - trace.latest[span_id]
            if not flush and waited < limits.quiet_period_s:
                continue
            span = trace.spans[span_id]
            if skip_nested:
                ancestry = self._ancestry(trace, span, above)
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

    def _ancestry(self, trace: _Trace, span: SpanRecord, above: dict[str, Ancestry]) -> Ancestry:
        """`selected` (an ancestor is selected), `root` (every ancestor is here, none selected)
        or `missing` (an ancestor has not arrived).

        `above` maps an unselected span already walked through to what lies above it; each
        span is walked through once per round, however many pending spans lie under it."""
        path: list[str] = []
        seen = {span.span_id}
        found: Ancestry = "root"
        parent_id = span.parent_span_id
        while parent_id is not None and parent_id not in seen:
            known = above.get(parent_id)
            if known is not None:
                found = known
                break
            parent = trace.spans.get(parent_id)
            if parent is None:
                found = "missing"
                break
            if parent_id in trace.selected:
                found = "selected"
                break
            seen.add(parent_id)
            path.append(parent_id)
            parent_id = parent.parent_span_id
        for walked in path:
            above[walked] = found
        return found
