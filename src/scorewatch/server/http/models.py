"""The service's request and response bodies: what the OpenAPI document shows clients.

Request models forbid unknown fields, so a misspelt field is answered with a 422 naming it
instead of being ignored.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...core.call import CALL_FIELDS, AgentCall
from ...core.not_scorable import NotScorableInfo
from ..intake.admission import MAX_TARGET_CHARS

__all__ = [
    "AcceptedRun",
    "BatchAccepted",
    "BatchRequest",
    "ErrorBody",
    "FieldProblem",
    "Health",
    "Readiness",
    "RunReport",
    "ScoreAccepted",
    "ScoreList",
    "ScoreRequest",
    "ScoreResults",
    "ScorerInfo",
    "ScorerList",
    "SkippedRun",
    "Stats",
]

_EXAMPLE_REQUEST: dict[str, Any] = {
    "scorers": ["summary"],
    "input": "Summarize: The company was founded in 1995 in Seattle by two engineers ...",
    "output": "Founded in 1995 in Seattle by two engineers.",
    "target": "support-bot",
    "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
    "span_id": "00f067aa0ba902b7",
}


class ScoreRequest(BaseModel):
    """One input/output pair of an agent, to be scored in the background: the scorers to run,
    and the fields of an `AgentCall` a client may send (`to_call`)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_EXAMPLE_REQUEST]})

    # What the route checks beyond the types: identifiers hold no NUL or unpaired surrogate,
    # content holds no NaN or Infinity.
    ID_FIELDS: ClassVar[tuple[str, ...]] = (
        "target",
        "trace_id",
        "span_id",
        "run_id",
        "conversation_id",
    )
    CONTENT_FIELDS: ClassVar[tuple[str, ...]] = (
        "input",
        "output",
        "request_context",
        "ground_truth",
        "metadata",
    )

    scorers: list[str] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="Ids of configured scorers to run; null or absent: every configured scorer.",
        examples=[["summary", "length"]],
    )
    input: Any = Field(
        description="What the agent was given: a string, chat messages, or any JSON value.",
        examples=["What is our refund policy?"],
    )
    output: Any = Field(
        description="What the agent answered: a string, chat messages, or any JSON value.",
        examples=["Refunds are accepted within 30 days."],
    )
    target: str = Field(
        min_length=1,
        max_length=MAX_TARGET_CHARS,
        description="The agent or workflow that produced the output (the score's entity).",
        examples=["support-bot"],
    )
    trace_id: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        description="Trace id of the agent's call (hex). Keys sampling: one trace is scored by "
        "all scorers sampled at the same rate, or by none.",
        examples=["4bf92f3577b34da6a3ce929d0e0e4736"],
    )
    span_id: str | None = Field(
        None, min_length=1, max_length=64, description="Span id of the agent's call (hex)."
    )
    run_id: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        description="The agent's own id for the call; keys sampling when there is no trace id.",
    )
    conversation_id: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="The conversation (session, thread) this call is one turn of; stored as "
        "the row's threadId.",
    )
    request_context: dict[str, Any] | None = Field(
        None, description="Request context passed to the scorers (e.g. user or tenant data)."
    )
    ground_truth: Any = Field(None, description="The expected answer, for scorers that use one.")
    metadata: dict[str, Any] | None = Field(
        None, description="Stored with the result's metadata; not used for scoring."
    )

    def to_call(self, run_id: str | None = None) -> AgentCall:
        """The call this request describes: every field it shares with `AgentCall`, by name,
        the call's defaults for the rest (a call's `score_source` is not the client's to
        choose: `live`); `run_id`, when given, in place of the request's (one made up for a
        request that sent none)."""
        # By position, from the model's field values over the defaults: half the time of a
        # call by keyword (every request of serve's makes one on the loop that reads them).
        values = _CALL_DEFAULTS | self.__dict__
        if run_id is not None:
            values["run_id"] = run_id
        # Its typed fields are this model's, validated: the run made of it is not checked again.
        return AgentCall.of_checked_fields(*_call_values(values))


# What `to_call` takes from the call's own defaults: the fields a client may not send.
_CALL_DEFAULTS: dict[str, Any] = {
    field.name: field.default
    for field in dataclasses.fields(AgentCall)
    if field.name not in ScoreRequest.model_fields
}
_call_values = operator.itemgetter(*CALL_FIELDS)


class BatchRequest(BaseModel):
    """Several pairs in one request; admitted all together or not at all."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"items": [_EXAMPLE_REQUEST]}]}
    )

    items: list[ScoreRequest] = Field(
        min_length=1, max_length=1000, description="Up to 1,000 items."
    )


class AcceptedRun(BaseModel):
    scorer: str = Field(description="The scorer id.", examples=["summary"])
    run_id: str = Field(
        description="Id of the scorer run; the stored result has this id.",
        examples=["scoring-summary-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"],
    )


class SkippedRun(BaseModel):
    scorer: str = Field(description="The scorer id.", examples=["length"])
    decision: Literal["not_sampled", "filtered", "skipped_budget"] = Field(
        description="`not_sampled`: outside the scorer's sampling rate; `filtered`: the "
        "scorer's filter declined the call; `skipped_budget`: a judge spend budget held it "
        "back (docs/live.md, Spend budgets).",
    )


class ScoreAccepted(BaseModel):
    """202: the sampled runs are queued; results land in the sinks and in `/metrics`."""

    accepted: list[AcceptedRun]
    skipped: list[SkippedRun]


class BatchAccepted(BaseModel):
    """202: the decisions per item, in request order."""

    items: list[ScoreAccepted]
    accepted: int = Field(description="Scorer runs queued in total.")
    skipped: int = Field(description="Scorer runs skipped in total.")


class RunReport(BaseModel):
    """One run as `?wait=true` reports it: its stored result, or why there is none yet."""

    scorer: str
    run_id: str
    status: Literal["success", "not_scorable", "failed", "pending", "dropped"] = Field(
        description="`not_scorable`: the scorer found nothing to judge (no score; "
        "`not_scorable` says which step and why). `pending`: not finished within the wait "
        "timeout; it keeps running and its result will be stored. `dropped`: not stored: "
        "given up at shutdown, or a sink stayed down past sinks.retry_timeout (counted). "
        "`failed` with error_code `unstorable`: a sink refused the row; the run is stored as "
        "a failure without content."
    )
    score: int | float | None = None
    not_scorable: NotScorableInfo | None = None
    reason: Any = None
    error: str | None = None
    error_code: str | None = None
    failed_step: str | None = None


class ScoreResults(BaseModel):
    """200 for `?wait=true`: the results of the runs, or `pending` for those still running."""

    results: list[RunReport]
    skipped: list[SkippedRun]
    complete: bool = Field(description="False when some run was still pending at the timeout.")


class ScoreList(BaseModel):
    """Stored results as score rows (camelCase, reference row layout), one page of them."""

    scores: list[dict[str, Any]]
    count: int
    next: str | None = Field(
        None, description="Pass as `cursor` to read the next page; null when this was the last."
    )


class ScorerInfo(BaseModel):
    id: str = Field(examples=["summary"])
    name: str = Field(examples=["Summarization Scorer"])
    description: str
    source: str = Field(
        description="`kind:<prebuilt name>` or `factory:<module:attribute>`.",
        examples=["kind:summarization"],
    )
    sampling: float = Field(description="Share of traffic scored.", examples=[0.25])
    has_judge: bool
    judge_model: str | None = Field(None, examples=["openai/gpt-4o-mini"])
    direction: str = Field(examples=["higher_is_better"])
    scale: float
    steps: list[dict[str, str]]
    filtered: bool = Field(description="Whether a filter runs before sampling.")


class ScorerList(BaseModel):
    scorers: list[ScorerInfo]


class FieldProblem(BaseModel):
    field: str = Field(description="Where in the body: dotted path, list indexes in brackets.")
    message: str


class ErrorBody(BaseModel):
    """Every error answer has this shape."""

    error: str = Field(
        description="A stable code: invalid_request, body_too_large, batch_too_large, "
        "unsupported_media_type, body_timeout, unknown_scorer, queue_full, shutting_down, "
        "queue_unavailable, outcome_unknown, unauthorized, "
        "not_found, method_not_allowed, no_result_store, result_store_unavailable.",
        examples=["unknown_scorer"],
    )
    message: str = Field(examples=["unknown scorer 'sumary'; known: length, summary"])
    fields: list[FieldProblem] | None = None
    known_scorers: list[str] | None = None
    retry_after: int | None = Field(None, description="Seconds; also sent as Retry-After.")
    runs: list[dict[str, Any]] | None = Field(
        None,
        description="`outcome_unknown`: `{item, scorer, run_id}` of every run the request "
        "carried, which may or may not have been accepted.",
    )


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    checks: dict[str, bool] = Field(
        description="`accepting` (not shutting down), `queue` (not saturated), `redis` (the "
        "work queue answers, in queue mode), `sink:<name>` (writable)."
    )


class Stats(BaseModel):
    """Counts since start (evaluations are (item, scorer) pairs) and current gauges."""

    model_config = ConfigDict(extra="allow")

    sampled: int
    not_sampled: int
    filtered: int
    dropped_queue_full: int
    dropped_shutdown: int
    skipped_budget: int = Field(
        0, description="Evaluations a judge spend budget held back ([budget], docs/live.md)."
    )
    scored: int
    failed: int
    rejected_requests: int
    sink_errors: int
    sink_refused: int = Field(
        0,
        description="Results a sink refused for a reason of their own row (stored as "
        "`unstorable` failures).",
    )
    sink_dropped: int = Field(
        0, description="Results a sink finally did not store (down past sinks.retry_timeout)."
    )
    rejected_draining: int = Field(0, description="Requests answered 503 while draining.")
    queued: int
    in_flight: int
