"""Batch extraction: every run a set of export requests holds, with what was skipped and why."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .assembly import BufferCounts, BufferLimits, ReadySpan, TraceBuffer
from .conversation import ConversationKeys
from .otlp import TraceData, requests_from
from .run import ExtractedRun, Skipped, SpanTree, extract_run
from .select import SpanSelector
from .sessions import SessionBuffer, SessionCounts, SessionLimits
from .spans import spans_from_request

__all__ = ["NO_CONTENT_HINT", "Extraction", "extract_ready", "extract_runs"]

logger = logging.getLogger("scorewatch.traces")

NO_CONTENT_HINT = (
    "selected spans without message content are not scored (counted as no_content): the "
    "agent's instrumentation records messages only when asked. For OpenTelemetry's GenAI "
    "instrumentations set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (with "
    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental) in the agent's environment; "
    "OpenInference: leave OPENINFERENCE_HIDE_INPUTS and OPENINFERENCE_HIDE_OUTPUTS unset; "
    "OpenLLMetry: TRACELOOP_TRACE_CONTENT=true. Said once per process."
)
_explained = threading.Event()


@dataclass(slots=True)
class Extraction:
    """The runs found, in trace then span-start order, and the selected spans not scored.

    `skipped` counts by reason: `no_content`, `no_output` (see `Skipped`) and `nested` (a
    selected span under another selected span, its selector not asking for nested spans).
    Read as sessions (`extract_runs(..., sessions=...)`), `runs` are the conversations' runs,
    `sessions` counts what became of their turns, and `skipped` also counts
    `no_conversation` (a run that names none)."""

    runs: list[ExtractedRun] = field(default_factory=list)
    skipped_spans: list[Skipped] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    buffer: BufferCounts = field(default_factory=BufferCounts)
    sessions: SessionCounts | None = None


def extract_ready(
    ready: Iterable[ReadySpan], into: Extraction, keys: ConversationKeys | None = None
) -> None:
    """Extract the runs of spans a `TraceBuffer` handed out, adding them to `into`; `keys`
    name the attributes read for a run's conversation."""
    trace: tuple[object, ...] | None = None
    tree: SpanTree | None = None
    for item in ready:
        # The spans a round hands out of one trace share one snapshot: one tree for them.
        if item.trace is not trace or tree is None:
            trace, tree = item.trace, SpanTree(item.trace)
        found = extract_run(item.span, tree, keys)
        if isinstance(found, Skipped):
            into.skipped_spans.append(found)
            into.skipped[found.reason] += 1
        else:
            into.runs.append(found)
    if into.skipped["no_content"] and not _explained.is_set():
        _explained.set()
        logger.warning("%s", NO_CONTENT_HINT)


def extract_runs(
    data: TraceData | ExportTraceServiceRequest | Iterable[TraceData],
    *,
    select: Sequence[SpanSelector] | None = None,
    limits: BufferLimits | None = None,
    sessions: SessionLimits | None = None,
) -> Extraction:
    """The runs of every selected span in `data` (requests, OTLP JSON, `file` exporter paths),
    assembled as the intake assembles them (the same bounds apply), then flushed at the end.
    With `sessions`, the runs are those of the conversations their turns make (`sessions`)."""
    buffer = TraceBuffer(select, limits)
    extraction = Extraction()
    for request in requests_from(data):
        buffer.add(spans_from_request(request))
    keys = sessions.keys if sessions is not None else None
    extract_ready(sorted(buffer.pop_ready(flush=True), key=_order), extraction, keys)
    extraction.skipped["nested"] += buffer.counts.nested_skipped
    if not extraction.skipped["nested"]:
        del extraction.skipped["nested"]
    extraction.buffer = buffer.counts
    if sessions is not None:
        _into_sessions(extraction, sessions)
    return extraction


def _into_sessions(extraction: Extraction, limits: SessionLimits) -> None:
    """Replace the runs by their conversations': the turns in start order, the clock at each
    turn's start, so a gap of `idle_s` between two turns of a file closes a session as a
    quiet `idle_s` does in serve."""
    now = 0.0
    sessions = SessionBuffer(limits, clock=lambda: now)
    found: list[ExtractedRun] = []
    for run in sorted(extraction.runs, key=lambda run: run.start_ns):
        if run.conversation_id is None:
            extraction.skipped["no_conversation"] += 1
            continue
        now = run.start_ns / 1e9
        found.extend(sessions.pop_closed())
        sessions.add(run)
    found.extend(sessions.pop_closed(flush=True))
    extraction.runs = sorted(found, key=lambda run: run.start_ns)
    extraction.sessions = sessions.counts


def _order(item: ReadySpan) -> tuple[int, int]:
    return (min(span.start_ns for span in item.trace), item.span.start_ns)
