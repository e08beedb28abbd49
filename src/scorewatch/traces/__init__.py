"""Scoring the traces agents already export: OTLP spans in, runs for the scorers out.

Layer: a sibling of `live`, built on judge, core, scorers and evals; nothing below imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attribute
from .assembly import BufferCounts, BufferLimits, Offer, ReadySpan, TraceBuffer
from .conventions import DEFAULT_SELECTORS
from .conversation import CONVERSATION_ATTRIBUTES, END_ATTRIBUTE, ConversationKeys
from .counts import TraceCounts
from .run import ExtractedRun, Skipped, extract_run
from .select import SpanSelector
from .sessions import SessionBuffer, SessionCounts, SessionLimits
from .spans import SpanEvent, SpanRecord, spans_from_request

if TYPE_CHECKING:
    from .collect import Extraction, extract_ready, extract_runs
    from .otlp import (
        INVALID_TRACE_DATA,
        TraceData,
        TraceDataError,
        parse_json,
        parse_protobuf,
        read_file_exporter,
        requests_from,
    )
    from .score import (
        ScoredSpan,
        TraceScores,
        run_items,
        score_extraction,
        score_traces,
        score_traces_sync,
    )

__all__ = [
    "CONVERSATION_ATTRIBUTES",
    "DEFAULT_SELECTORS",
    "END_ATTRIBUTE",
    "INVALID_TRACE_DATA",
    "BufferCounts",
    "BufferLimits",
    "ConversationKeys",
    "ExtractedRun",
    "Extraction",
    "Offer",
    "ReadySpan",
    "ScoredSpan",
    "SessionBuffer",
    "SessionCounts",
    "SessionLimits",
    "Skipped",
    "SpanEvent",
    "SpanRecord",
    "SpanSelector",
    "TraceBuffer",
    "TraceCounts",
    "TraceData",
    "TraceDataError",
    "TraceScores",
    "extract_ready",
    "extract_run",
    "extract_runs",
    "parse_json",
    "parse_protobuf",
    "read_file_exporter",
    "requests_from",
    "run_items",
    "score_extraction",
    "score_traces",
    "score_traces_sync",
    "spans_from_request",
]

# Reading OTLP (protobuf) and scoring (batch evaluation) are imported on first use, so the
# types of the other parts (the trace counts telemetry reads, the runs) stay cheap to import.
_LAZY: dict[str, tuple[str, str | None]] = {
    **{name: (".collect", name) for name in ("Extraction", "extract_ready", "extract_runs")},
    **{
        name: (".otlp", name)
        for name in (
            "INVALID_TRACE_DATA",
            "TraceData",
            "TraceDataError",
            "parse_json",
            "parse_protobuf",
            "read_file_exporter",
            "requests_from",
        )
    },
    **{
        name: (".score", name)
        for name in (
            "ScoredSpan",
            "SessionBuffer",
            "SessionCounts",
            "SessionLimits",
            "TraceScores",
            "run_items",
            "score_extraction",
            "score_traces",
            "score_traces_sync",
        )
    },
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(globals(), _LAZY, name)
