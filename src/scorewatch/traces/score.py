"""`score_traces`: score the runs found in OTLP trace data, the counterpart of the reference's
`scoreTraces`. The runs go through `run_experiment` (the same scorer path, concurrency and error
isolation as `scorewatch eval`); each result carries the evaluated span's trace and span ids."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from pydantic import BaseModel

from ..core.sync import synchronous
from ..evals.entries import EvalScorer
from ..evals.experiment import (
    ExperimentItem,
    ExperimentSummary,
    OnResult,
    ScorerResult,
    run_experiment,
)
from ..privacy import PrivacyPolicy
from .assembly import BufferLimits
from .collect import Extraction, extract_runs
from .otlp import TraceData
from .select import SpanSelector
from .sessions import SessionLimits

__all__ = [
    "ScoredSpan",
    "TraceScores",
    "run_items",
    "score_extraction",
    "score_traces",
    "score_traces_sync",
]


class ScoredSpan(BaseModel):
    """One evaluated span and every scorer's result on its run; for a conversation scored as a
    session, its first turn's span, the conversation id and how many turns it held."""

    trace_id: str
    span_id: str
    span_name: str
    agent: str | None = None
    tool_calls: list[str] = []
    conversation_id: str | None = None
    turns: int | None = None
    results: dict[str, ScorerResult] = {}


class TraceScores(BaseModel):
    """Mean score per scorer, the spans scored, and what was not scored and why.

    `skipped`: selected spans not scored, by reason (`no_content`, `no_output`, `nested`);
    `dropped`: spans or traces the assembly bounds dropped, by reason (and turns the session
    bounds dropped); `sessions`: scored as sessions, how each closed (`closed_idle`, ...)."""

    scores: dict[str, float]
    spans: list[ScoredSpan]
    skipped: dict[str, int]
    dropped: dict[str, int]
    summary: ExperimentSummary
    sessions: dict[str, int] = {}


async def score_traces(
    scorers: Sequence[EvalScorer],
    data: TraceData | ExportTraceServiceRequest | Iterable[TraceData],
    *,
    select: Sequence[SpanSelector] | None = None,
    limits: BufferLimits | None = None,
    concurrency: int = 1,
    on_result: OnResult | None = None,
    sessions: SessionLimits | None = None,
) -> TraceScores:
    """Score every selected span of `data` (export requests, OTLP JSON, Collector `file`
    exporter files) with every scorer. `on_result` sees each (span, scorer) outcome as it
    finishes, as `run_experiment`'s does; its result's `target_trace_id` / `target_span_id` name
    the span. With `sessions`, each conversation is scored once, as one run of its turns."""
    # Reading files and decoding spans is blocking CPU work: keep it off the caller's loop.
    extraction = await asyncio.to_thread(
        extract_runs, data, select=select, limits=limits, sessions=sessions
    )
    return await score_extraction(scorers, extraction, concurrency=concurrency, on_result=on_result)


async def score_extraction(
    scorers: Sequence[EvalScorer],
    extraction: Extraction,
    *,
    concurrency: int = 1,
    on_result: OnResult | None = None,
    on_item_complete: Callable[[ExperimentItem], Any] | None = None,
    privacy: PrivacyPolicy | None = None,
) -> TraceScores:
    """Score the runs of an `extract_runs` result: the second half of `score_traces`, for
    callers that look at what was read before scoring it (`scorewatch score-traces` sizes its
    progress bar and reports the counts). `on_item_complete` sees each span once every scorer
    has finished with it (its `index` is the run's position in `extraction.runs`)."""
    counts = extraction.buffer
    dropped = {
        **{f"span_{k}": v for k, v in counts.spans_dropped.items()},
        **{f"trace_{k}": v for k, v in counts.traces_evicted.items()},
    }
    sessions = extraction.sessions
    if sessions is not None:
        dropped.update({f"turn_{k}": v for k, v in sessions.turns_dropped.items()})
    spans = [
        ScoredSpan(
            trace_id=run.trace_id,
            span_id=run.span_id,
            span_name=run.span_name,
            agent=run.agent,
            tool_calls=run.tool_calls,
            conversation_id=run.conversation_id,
            turns=None if run.session is None else run.session["turns"],
        )
        for run in extraction.runs
    ]
    if not spans:
        summary = ExperimentSummary(total_items=0, failed_items=0, scorer_failures={})
        return TraceScores(
            scores={},
            spans=[],
            skipped=dict(extraction.skipped),
            dropped=dropped,
            summary=summary,
            sessions=_session_outcomes(extraction),
        )
    experiment = await run_experiment(
        data=run_items(extraction),
        scorers=scorers,
        concurrency=concurrency,
        on_result=on_result,
        privacy=privacy,
        on_item_complete=on_item_complete,
    )
    for span, item in zip(spans, experiment.items, strict=True):
        span.results = item.results
    return TraceScores(
        scores=experiment.scores,
        spans=spans,
        skipped=dict(extraction.skipped),
        dropped=dropped,
        summary=experiment.summary,
        sessions=_session_outcomes(extraction),
    )


def _session_outcomes(extraction: Extraction) -> dict[str, int]:
    sessions = extraction.sessions
    return {} if sessions is None else dict(sessions.outcomes())


def run_items(extraction: Extraction) -> list[dict[str, Any]]:
    """The experiment items of the runs, in order: each run's call by its fields (`input`,
    `output`, `trace_id`, `span_id`, `score_source`, ...), as `run_experiment` reads an item."""
    return [run.to_call().to_dict() for run in extraction.runs]


score_traces_sync = synchronous(score_traces)
