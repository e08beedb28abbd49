"""Scoring the traces agents already export: OTLP spans in, runs for the scorers out.

Layer: a sibling of `live`, built on judge, core, scorers and evals; nothing below imports it.
"""

from __future__ import annotations

from .assembly import BufferCounts, BufferLimits, Offer, ReadySpan, TraceBuffer
from .collect import Extraction, extract_ready, extract_runs
from .conventions import DEFAULT_SELECTORS
from .otlp import (
    INVALID_TRACE_DATA,
    TraceData,
    TraceDataError,
    parse_json,
    parse_protobuf,
    read_file_exporter,
    requests_from,
)
from .run import ExtractedRun, Skipped, extract_run
from .score import (
    ScoredSpan,
    TraceScores,
    run_items,
    score_extraction,
    score_traces,
    score_traces_sync,
)
from .select import SpanSelector
from .spans import SpanEvent, SpanRecord, spans_from_request

__all__ = [
    "DEFAULT_SELECTORS",
    "INVALID_TRACE_DATA",
    "BufferCounts",
    "BufferLimits",
    "ExtractedRun",
    "Extraction",
    "Offer",
    "ReadySpan",
    "ScoredSpan",
    "Skipped",
    "SpanEvent",
    "SpanRecord",
    "SpanSelector",
    "TraceBuffer",
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
