"""`ScoreRecord`: one finished scorer run on one call, as every sink stores it.

Live scoring, `scorewatch serve`, the queue workers, experiments and scored traces all produce this
one record; only `source` tells live traffic (`LIVE`) from batch evaluation (`TEST`). `to_row()` is
the reference system's score row (camelCase; docs/reference-semantics.md, "The score row") plus the
fields the reference leaves out: the judge records, the run status, the scorer version
(`scorerVersion`, the scorer's `version_fingerprint`; a declared version is in
`scorer.declaredVersion`) and, for failed runs, the error, the failed step and the completed
steps. A failed run carries no score; neither does a run a scorer declared not scorable (status
`not_scorable`, with `metadata.notScorable = {step, reason}`), which the reference does not store
at all. Secret-looking keys of the request context and metadata are
redacted (the scorer itself saw them unchanged). A record made with the run's `Redaction` (a
privacy policy's) has personal data in every content column replaced by the run's markers:
input, output, context, ground truth, metadata, step results, prompts, reason, judge records and
error; `kept()` does the same for a value shown elsewhere (serve's answers)."""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from itertools import repeat
from math import isfinite
from typing import Any, Final, Literal, get_args

from pydantic_core import to_jsonable_python

from ..core.call import AgentCall
from ..core.errors import ScorerRunError, failure_code
from ..core.not_scorable import NotScorableInfo
from ..core.result import ScorerRunResult, ScorerRunSnapshot
from ..core.scorer import Scorer
from ..core.steps import camel_step
from ..judge.errors import JudgeError
from ..privacy import Redaction
from .memo import BoundedMemo
from .storable import (
    plain_storable_json,
    redacts_any,
    storable,
    storable_columns,
    storable_json,
    storable_text,
    stored_json,
)

__all__ = [
    "JSON_COLUMNS",
    "SCORE_COLUMNS",
    "TIME_COLUMNS",
    "RecordOutcome",
    "RowSource",
    "ScoreRecord",
    "ScoreStatus",
    "decode_row",
    "encode_row",
    "iso_timestamp",
    "kept_value",
    "record_json",
]

ScoreStatus = Literal["success", "failed", "not_scorable"]
_STATUSES: frozenset[str] = frozenset(get_args(ScoreStatus))
RecordOutcome = Literal["scored", "failed", "not_scorable"]
"""How a work queue counts a finished run (its status, with `success` counted as `scored`)."""
RowSource = Literal["LIVE", "TEST"]
"""The reference row's `source`: live traffic, or batch evaluation (experiments)."""


# The row's fields, in the order `ScoreRecord.to_row()` builds them and the SQL sinks' columns
# hold them.
SCORE_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "scorerId",
    "entityId",
    "runId",
    "input",
    "output",
    "additionalContext",
    "requestContext",
    "extractStepResult",
    "extractPrompt",
    "score",
    "analyzeStepResult",
    "analyzePrompt",
    "reason",
    "reasonPrompt",
    "scorer",
    "metadata",
    "source",
    "entity",
    "entityType",
    "structuredOutput",
    "traceId",
    "spanId",
    "resourceId",
    "threadId",
    "preprocessStepResult",
    "preprocessPrompt",
    "generateScorePrompt",
    "generateReasonPrompt",
    "createdAt",
    "updatedAt",
    "target",
    "status",
    "judge",
    "error",
    "errorCode",
    "errorType",
    "failedStep",
    "completedSteps",
    "scorerVersion",
    "reviewSampled",
)
JSON_COLUMNS: Final = frozenset(
    {
        "input",
        "output",
        "additionalContext",
        "requestContext",
        "extractStepResult",
        "analyzeStepResult",
        "scorer",
        "metadata",
        "entity",
        "preprocessStepResult",
        "judge",
        "completedSteps",
    }
)
TIME_COLUMNS: Final = frozenset({"createdAt", "updatedAt"})
# The columns that may hold content (what the agent and the judge said), which a privacy policy
# redacts; the others are ids, names, times, numbers and codes scorewatch made.
_CONTENT_COLUMNS: Final = frozenset(
    {
        "input",
        "output",
        "additionalContext",
        "extractStepResult",
        "extractPrompt",
        "analyzeStepResult",
        "analyzePrompt",
        "reason",
        "reasonPrompt",
        "preprocessStepResult",
        "preprocessPrompt",
        "generateScorePrompt",
        "generateReasonPrompt",
        "judge",
        "error",
    }
)
# The same columns in the row's order: a run's markers are numbered in the order its texts are
# read, so reading them in a fixed order numbers them alike in every process (a frozenset's
# order of text follows the process's hash seed).
_CONTENT_ORDER: Final = tuple(column for column in SCORE_COLUMNS if column in _CONTENT_COLUMNS)


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
# `.mmmZ` for every millisecond, and the last second `iso_timestamp` wrote (seconds since the
# epoch, `YYYY-MM-DDTHH:MM:SS`).
_MILLISECONDS: Final = tuple(f".{milliseconds:03d}Z" for milliseconds in range(1000))
_LAST_SECOND: tuple[int | None, str] = (None, "")


def iso_timestamp(moment: datetime) -> str:
    """UTC, millisecond precision, `Z` suffix: sorts as text, as the reference system stores it."""
    global _LAST_SECOND
    if type(moment) is datetime and moment.tzinfo is UTC:  # a record's own `created_at`
        # The text up to the seconds is the same for every moment of one second (rows come
        # many a second): remembered for the last second asked, by its count since the epoch
        # (exact: whole days and seconds); the milliseconds, truncated as below, from a table.
        # `isoformat` (~14k instructions) writes it once a second. It pads a year before 1000
        # to four digits (a leading 0), which the text below does not: such a year goes below.
        since = moment - _EPOCH
        second = since.days * 86_400 + since.seconds
        last = _LAST_SECOND
        if last[0] == second:
            return last[1] + _MILLISECONDS[moment.microsecond // 1000]
        text = moment.isoformat(timespec="seconds")[:19]
        if text[0] != "0":
            # One tuple, replaced whole: a thread reading it sees a second and its text.
            _LAST_SECOND = (second, text)
            return text + _MILLISECONDS[moment.microsecond // 1000]
    utc = moment.astimezone(UTC)
    # (The milliseconds are the moment's own, as they always were: an offset may hold some.)
    if utc.year < 1000:  # `strftime`'s `%Y` (the C library's) does not pad it to four digits
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    # The same text by %-formatting: half of `strftime`'s cost, paid by every stored row (an
    # f-string's format specs, one parsed per field, cost most of what this saves).
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031
        utc.year,
        utc.month,
        utc.day,
        utc.hour,
        utc.minute,
        utc.second,
        moment.microsecond // 1000,
    )


def _entity(call: AgentCall) -> tuple[str, dict[str, Any], str]:
    """The row's `entityId`, `entity` and `entityType`: the agent for a call, as the reference
    stores live scores; the evaluated span and its type for a call read from a trace, as the
    reference stores trace scores (`unknown` when the span names no agent)."""
    if call.score_source == "trace":
        span_type = (call.metadata or {}).get("spanType")
        return (
            call.target or "unknown",
            {"traceId": call.trace_id, "spanId": call.span_id},
            span_type if isinstance(span_type, str) and span_type else "agent_run",
        )
    return call.target or "", {"id": call.target or "", "name": call.target or ""}, "AGENT"


def kept_value(value: Any, redaction: Redaction | None) -> Any:
    """`value` as a run's record keeps it (`ScoreRecord.kept`): JSON-ready, storable, and
    redacted by the run's `redaction` when a privacy policy applies (its spans' structured
    content too, written as JSON after its texts are redacted)."""
    if value is None:
        return None
    return storable(_jsonable(value), privacy=redaction)


def _jsonable(value: Any) -> Any:
    # Most inputs and outputs, and the steps a scorer does not have: `to_jsonable_python`
    # returns text and None as they are.
    if type(value) is str or value is None:
        return value
    try:
        return to_jsonable_python(value, fallback=repr, serialize_unknown=True)
    except UnicodeError:  # text that has no UTF-8 form (an unpaired surrogate): stored cleaned
        return to_jsonable_python(storable(value), fallback=repr, serialize_unknown=True)


@dataclass(frozen=True, slots=True)
class ScoreRecord:
    """One scorer run on one `call`: `id` is the scorer run's id (the row id), `status` says
    whether it scored, failed or found nothing to score, `result` holds what its steps produced
    (a snapshot read back from a row, or the failed run's partial result)."""

    id: str
    scorer_id: str
    scorer_name: str
    scorer_description: str
    has_judge: bool
    call: AgentCall
    status: ScoreStatus
    # The scorer's `version_fingerprint` and declared `version`: rows of one scorer id made by
    # different definitions are told apart (None in rows written before scorewatch kept it).
    scorer_version: str | None = None
    scorer_declared_version: str | None = None
    result: ScorerRunResult | ScorerRunSnapshot | None = None
    error: str | None = None
    error_code: str | None = None
    error_type: str | None = None
    failed_step: str | None = None
    completed_steps: tuple[str, ...] = ()
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    source: RowSource = "LIVE"
    # False when running it again cannot help: the judge refused the call for good (401, 400,
    # a prompt over the context window, ...). Other failures may be transient.
    retryable: bool = True
    # The run's redactor when a privacy policy applies: what the record keeps is redacted.
    redaction: Redaction | None = field(default=None, compare=False, repr=False)
    # In its scorer's review sample (`LiveScorerEntry.review_rate`): marked when it was scored,
    # stored as `reviewSampled`, so the runs waiting for a human label are an indexed query.
    review: bool = False

    @classmethod
    def success(
        cls,
        run_id: str,
        scorer: Scorer,
        call: AgentCall,
        result: ScorerRunResult,
        source: RowSource = "LIVE",
        redaction: Redaction | None = None,
        *,
        review: bool = False,
    ) -> ScoreRecord:
        """A finished run: `not_scorable` when a step declared it so, else `success`; `review`
        marks it for human review (only a run with a score is)."""
        status: ScoreStatus = "success" if result.not_scorable is None else "not_scorable"
        marked = review and status == "success"
        return cls._of(
            run_id, scorer, call, source, status, result, redaction=redaction, review=marked
        )

    @classmethod
    def failure(
        cls,
        run_id: str,
        scorer: Scorer,
        call: AgentCall,
        error: BaseException,
        source: RowSource = "LIVE",
        redaction: Redaction | None = None,
    ) -> ScoreRecord:
        """A failed run: stored with its error and snapshot, never as a score."""
        if not isinstance(error, ScorerRunError):
            return cls._of(
                run_id, scorer, call, source, "failed", None, error, error, redaction=redaction
            )
        return cls._of(
            run_id,
            scorer,
            call,
            source,
            "failed",
            error.result,
            error,
            error.__cause__ or error,
            error.failed_step,
            tuple(error.completed_steps),
            redaction=redaction,
        )

    @classmethod
    def _of(
        cls,
        run_id: str,
        scorer: Scorer,
        call: AgentCall,
        source: RowSource,
        status: ScoreStatus,
        result: ScorerRunResult | ScorerRunSnapshot | None,
        error: BaseException | None = None,
        cause: BaseException | None = None,
        failed_step: str | None = None,
        completed_steps: tuple[str, ...] = (),
        *,
        redaction: Redaction | None = None,
        review: bool = False,
    ) -> ScoreRecord:
        error_text = None if error is None else str(error) or type(error).__name__
        code = None if error is None else failure_code(error)
        cause_type = None if cause is None else type(cause).__name__
        retryable = not (isinstance(cause, JudgeError) and not cause.retryable)
        if cls is not ScoreRecord:  # a subclass may add slots: the generic way
            record = cls.__new__(cls)
            deque(
                map(
                    _object_setattr,
                    repeat(record),
                    _FIELD_NAMES,
                    (
                        run_id,
                        scorer.id,
                        scorer.name,
                        scorer.description,
                        scorer.has_judge,
                        call,
                        status,
                        scorer.version_fingerprint,
                        scorer.declared_version,
                        result,
                        error_text,
                        code,
                        cause_type,
                        failed_step,
                        completed_steps,
                        datetime.now(UTC),
                        source,
                        retryable,
                        redaction,
                        review,
                    ),
                ),
                0,
            )
            return record
        # A record is made for every scored run. The frozen dataclass's `__init__` (and a loop
        # of `object.__setattr__`) pays a slot wrapper's call per field, ~1k instructions each;
        # a `_Draft` (the same slots, not frozen) takes each field by a plain attribute store,
        # and then becomes the `ScoreRecord` it is laid out as (`__class__` assignment between
        # types of the same layout: one call). Every field is set, in declaration order.
        draft: Any = _Draft()  # (its slots are the record's fields, typed there)
        draft.id = run_id
        draft.scorer_id = scorer.id
        draft.scorer_name = scorer.name
        draft.scorer_description = scorer.description
        draft.has_judge = scorer.has_judge
        draft.call = call
        draft.status = status
        draft.scorer_version = scorer.version_fingerprint
        draft.scorer_declared_version = scorer.declared_version
        draft.result = result
        draft.error = error_text
        draft.error_code = code
        draft.error_type = cause_type
        draft.failed_step = failed_step
        draft.completed_steps = completed_steps
        draft.created_at = datetime.now(UTC)
        draft.source = source
        draft.retryable = retryable
        draft.redaction = redaction
        draft.review = review
        _object_setattr(draft, "__class__", ScoreRecord)
        made: ScoreRecord = draft
        return made

    @classmethod
    def from_row(cls, row: Mapping[str, Any], call: AgentCall) -> ScoreRecord:
        """A result read back from its stored row (`to_row`'s output, as a sink returns it):
        status, score, reason and failure fields; the step results stay in the row."""
        run_id = str(row["id"])
        scorer_id = str(row["scorerId"])
        scorer = row.get("scorer") or {}
        completed = row.get("completedSteps") or ()
        status = row.get("status")
        metadata = row.get("metadata")
        skipped = metadata.get("notScorable") if isinstance(metadata, Mapping) else None
        return cls(
            id=run_id,
            scorer_id=scorer_id,
            scorer_name=str(scorer.get("name") or scorer_id),
            scorer_description=str(scorer.get("description") or ""),
            has_judge=bool(scorer.get("hasJudge")),
            call=call,
            scorer_version=row.get("scorerVersion"),
            scorer_declared_version=scorer.get("declaredVersion"),
            status=status if isinstance(status, str) and status in _STATUSES else "failed",  # type: ignore[arg-type]
            result=ScorerRunSnapshot(
                run_id=run_id,
                score=row.get("score"),
                reason=row.get("reason"),
                not_scorable=NotScorableInfo.model_validate(skipped)
                if status == "not_scorable" and isinstance(skipped, Mapping)
                else None,
            ),
            error=row.get("error"),
            error_code=row.get("errorCode"),
            error_type=row.get("errorType"),
            failed_step=row.get("failedStep"),
            completed_steps=tuple(str(step) for step in completed),
            review=bool(row.get("reviewSampled")),
        )

    @property
    def score(self) -> int | float | None:
        if self.status != "success" or self.result is None:
            return None
        return self.result.score

    @property
    def not_scorable(self) -> NotScorableInfo | None:
        return None if self.result is None else self.result.not_scorable

    @property
    def outcome(self) -> RecordOutcome:
        """How a work queue counts this run."""
        return "scored" if self.status == "success" else self.status

    @property
    def reason(self) -> Any:
        return None if self.result is None else self.result.reason

    def judge_records(self) -> dict[str, Any] | None:
        judge = None if self.result is None else self.result.judge
        if not judge:
            return None
        return {
            camel_step(step): record.model_dump(mode="json", by_alias=True)
            for step, record in judge.items()
        }

    def to_row(self) -> dict[str, Any]:
        """The row every sink stores: the reference score row plus judge records and failure
        fields, JSON-ready and `storable`, secret-looking keys of the call's request context and
        metadata redacted. Each value is walked once: the metadata and the request context on
        their own (redacted where it applies), the rest of the row together."""
        return self._to_row(walk=True)[0]

    def _to_row(self, walk: bool, plain: bool = False) -> tuple[dict[str, Any], bool]:
        """`to_row`, and whether the run's redactor replaced anything in it; without `walk`,
        and when no redactor applies or it finds nothing to replace, the row but for its
        metadata and request context is left as `_row` made it (plain JSON data, not yet
        `storable`): `encode_record` makes it so column by column. `plain`: the call's input
        and output are in it as they are (`_row`)."""
        truth, extra, context, not_scorable = self._call_parts()
        row: dict[str, Any] = self._row(plain)
        private = self.redaction
        columns: dict[str, Any] = {}
        if private is not None:
            columns = {k: row[k] for k in _CONTENT_ORDER if k in row}
            if not redacts_any(private, [columns, truth, extra, context, not_scorable]):
                private = None  # nothing to replace (all texts scanned in one pass): as is
        metadata = self._metadata(truth, extra, not_scorable, walk, private)
        if private is None:
            if walk:
                row = storable(row)
        else:  # each value is still walked once: the content columns with the redactor
            rest = dict(row)
            for k in columns:
                del rest[k]
            # The row's columns in its order (built by dictionaries' own copying and updating,
            # not a Python loop over the columns).
            row = dict.fromkeys(row)
            row.update(storable(rest))
            row.update(storable_columns(columns, private))
        if context is not None:
            row["requestContext"] = storable(context, redact=True, privacy=private, prepared=True)
        row["metadata"] = metadata
        return row, private is not None

    def _call_parts(self) -> tuple[Any, Any, Any, Any]:
        """The call's ground truth, metadata and request context, JSON-ready, and the run's
        `not_scorable` as the row's metadata keeps it (None where there is none)."""
        call = self.call
        truth = None if call.ground_truth is None else _jsonable(call.ground_truth)
        extra = _jsonable(call.metadata) if call.metadata else None
        context = None if call.request_context is None else _jsonable(call.request_context)
        skipped = self.not_scorable
        # The reference's score row has no column for this; metadata keeps the table as is.
        not_scorable = None if skipped is None else skipped.model_dump(mode="json", by_alias=True)
        return truth, extra, context, not_scorable

    def _metadata(
        self, truth: Any, extra: Any, not_scorable: Any, walk: bool, private: Redaction | None
    ) -> dict[str, Any]:
        """The row's `metadata` of `_call_parts`, storable (redacted by `private`, whose
        `redacts_any` has scanned them, when it replaces something)."""
        call = self.call
        metadata: dict[str, Any] = {"structuredOutput": False}
        if call.run_id:
            metadata["agentRunId"] = storable(call.run_id)
        if truth is not None:
            metadata["groundTruth"] = storable(truth, privacy=private, prepared=True)
        if extra is not None:
            cleaned = _cleaned_once(extra) if not walk and private is None else None
            if cleaned is None:
                cleaned = storable(extra, redact=True, privacy=private, prepared=True)
            metadata.update(cleaned)
        if call.score_source == "trace":
            # The reference row's `source` is LIVE or TEST; a call read from spans says so here.
            metadata["scoreSource"] = storable(call.score_source)
        if not_scorable is not None:
            metadata["notScorable"] = storable(not_scorable, privacy=private, prepared=True)
        return metadata

    def kept(self, value: Any) -> Any:
        """`value` (a reason, an error, ...) as this record keeps it: storable, and redacted
        by the run's redactor when a privacy policy applies."""
        return kept_value(value, self.redaction)

    def _row(self, plain: bool = False) -> dict[str, Any]:
        """The row but for `requestContext` and `metadata` (filled in by `to_row`); `plain`:
        with the call's input and output as they are, not their JSON-ready copies (a call
        marked `plain_json`, whose row is written by `plain_storable_json`)."""
        return dict(zip(SCORE_COLUMNS, self._row_values(plain), strict=True))

    def _row_values(self, plain: bool = False) -> list[Any]:
        """`_row`'s values in `SCORE_COLUMNS` order: what the SQLite writer encodes, without
        the dictionary (41 keys inserted and read back, ~10k instructions a row)."""
        result = self.result
        # The result's fields read from its dictionary (where a pydantic model keeps them):
        # an attribute of a model passes its `__getattr__` hook, a few hundred instructions
        # each, and a row reads a dozen. No result: every step's field None.
        steps = _NO_STEPS if result is None else result.__dict__
        call = self.call
        stamp = iso_timestamp(self.created_at)
        reason = steps["reason"]
        entity_id, entity, entity_type = _entity(call)
        return [
            self.id,  # id
            self.scorer_id,  # scorerId
            entity_id,  # entityId
            self.id,  # runId
            call.input if plain else _jsonable(call.input),  # input
            call.output if plain else _jsonable(call.output),  # output
            None,  # additionalContext
            None,  # requestContext
            None,  # extractStepResult
            None,  # extractPrompt
            steps["score"] if self.status == "success" else None,  # score (`self.score`)
            _jsonable(steps["analyze_step_result"]),  # analyzeStepResult
            steps["analyze_prompt"],  # analyzePrompt
            reason if reason is None or isinstance(reason, str) else _jsonable(reason),  # reason
            steps["generate_reason_prompt"],  # reasonPrompt
            self._scorer_fields(),  # scorer
            None,  # metadata
            self.source,  # source
            entity,  # entity
            entity_type,  # entityType
            False,  # structuredOutput
            call.trace_id,  # traceId
            call.span_id,  # spanId
            None,  # resourceId
            call.conversation_id,  # threadId
            _jsonable(steps["preprocess_step_result"]),  # preprocessStepResult
            steps["preprocess_prompt"],  # preprocessPrompt
            steps["generate_score_prompt"],  # generateScorePrompt
            steps["generate_reason_prompt"],  # generateReasonPrompt
            stamp,  # createdAt
            stamp,  # updatedAt
            # Beyond the reference row:
            call.target,  # target
            self.status,  # status
            self.judge_records() if steps["judge"] else None,  # judge
            self.error,  # error
            self.error_code,  # errorCode
            self.error_type,  # errorType
            camel_step(self.failed_step) if self.failed_step else None,  # failedStep
            # (`map`, not a comprehension: no function and frame made for the usual none.)
            list(map(camel_step, self.completed_steps)),  # completedSteps
            self.scorer_version,  # scorerVersion
            self.review,  # reviewSampled
        ]

    def _scorer_fields(self) -> dict[str, Any]:
        """The row's `scorer`: the reference's four fields and the declared version, if any."""
        fields: dict[str, Any] = {
            "id": self.scorer_id,
            "name": self.scorer_name,
            "description": self.scorer_description,
            "hasJudge": self.has_judge,
        }
        if self.scorer_declared_version is not None:
            fields["declaredVersion"] = self.scorer_declared_version
        return fields


_FIELD_NAMES: Final = tuple(declared.name for declared in fields(ScoreRecord))
# A record without a result: the fields `_row_values` reads of one, all None.
_NO_STEPS: Final[Mapping[str, Any]] = dict.fromkeys(ScorerRunSnapshot.model_fields)
_object_setattr: Final = object.__setattr__


class _Draft:
    """A `ScoreRecord` being made (`ScoreRecord._of`): the same slots in the same order, so
    its layout is the record's, without the frozen `__setattr__`."""

    __slots__ = _FIELD_NAMES


# Where each kind of column sits in `SCORE_COLUMNS`: `encode_row` takes a row's values in one
# C-level pass (`map(row.get, ...)`) and then visits only the columns that may need work.
_INDEX: Final = {column: index for index, column in enumerate(SCORE_COLUMNS)}
_JSON_AT: Final = tuple(_INDEX[column] for column in SCORE_COLUMNS if column in JSON_COLUMNS)
_SCORE_AT: Final = _INDEX["score"]
_REASON_AT: Final = _INDEX["reason"]
# The other columns: those that hold text or None (ids, names, times, codes), checked
# together, and the few others (the booleans), cleaned one by one.
_FLAGS: Final = ("structuredOutput", "reviewSampled")
_TEXT_AT: Final = tuple(
    index
    for column, index in _INDEX.items()
    if column not in JSON_COLUMNS and column not in _FLAGS and index not in (_SCORE_AT, _REASON_AT)
)
_OTHER_AT: Final = (_SCORE_AT, *(_INDEX[column] for column in _FLAGS))
_text_values: Final = operator.itemgetter(*_TEXT_AT)
_TEXT_TYPES: Final = frozenset({str, type(None)})
_JSON_SET: Final = frozenset(_JSON_AT)


def encode_row(
    row: Mapping[str, Any],
    *,
    dumps: Callable[[Any], str],
    as_json: Callable[[Any], Any] | None = None,
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
    clean: Callable[[Any], Any] | None = None,
    written: Mapping[int, str] | None = None,
) -> tuple[Any, ...]:
    """`row` (a `ScoreRecord.to_row()`) as values in `SCORE_COLUMNS` order. None stays None; a
    JSON column's value becomes `as_json(value)` (default: the text `dumps(value)`); a reason
    that is not text becomes `dumps(reason)`; `convert` adapts any other column but the reason,
    after `clean` (the row is not `storable` yet: `encode_record`; `clean` is `storable` of a
    column, which leaves booleans, integers and finite numbers as they are). `written`: JSON
    columns' texts already written (by column index), placed as they are (their values in `row`
    None)."""
    return _encode_values(
        list(map(row.get, SCORE_COLUMNS)),
        dumps=dumps,
        as_json=as_json,
        convert=convert,
        clean=clean,
        written=written,
    )


def _encode_values(
    values: list[Any],
    *,
    dumps: Callable[[Any], str],
    as_json: Callable[[Any], Any] | None = None,
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
    clean: Callable[[Any], Any] | None = None,
    written: Mapping[int, str] | None = None,
) -> tuple[Any, ...]:
    """`encode_row` of the row whose values, in `SCORE_COLUMNS` order, are `values` (changed
    in place)."""
    to_json = dumps if as_json is None else as_json
    for index in _JSON_AT:
        value = values[index]
        if value is not None:
            values[index] = to_json(value)
    reason = values[_REASON_AT]
    if reason is not None:
        if clean is not None and not isinstance(reason, str):
            # As the walk leaves it first: a reason that is an infinity or NaN becomes text.
            reason = clean(reason)
        values[_REASON_AT] = (
            dumps(reason)
            if not isinstance(reason, str)
            else reason
            if clean is None
            else clean(reason)
        )
    if clean is not None:
        for index in _OTHER_AT:
            value = values[index]
            # A boolean flag and a finite score are storable as they are: told here rather
            # than by a call of `clean` each (`_storable_column` tells them alike).
            kind = type(value)
            if value is not None and not (
                kind is bool or kind is int or (kind is float and isfinite(value))
            ):
                values[index] = clean(value)
        # The text columns need no cleaning when all of them are text (or None, or empty)
        # and none holds what cleaning replaces: told from them all joined, by C-level checks,
        # rather than a call per column. Anything else (a number, an unpaired surrogate): each
        # column cleaned as it comes.
        texts = _text_values(values)
        # Told by their exact types, in C (a `str` subclass, a number, an empty tuple, which
        # cleaning makes a list: cleaned one by one).
        joined = "".join(filter(None, texts)) if _TEXT_TYPES.issuperset(map(type, texts)) else None
        if joined is None or (
            ("\x00" in joined or not joined.isascii()) and storable_text(joined) is not joined
        ):
            for index in _TEXT_AT:
                value = values[index]
                if value is not None:
                    values[index] = clean(value)
    if written:
        for index, text in written.items():
            values[index] = text
    if convert:
        for column, adapt in convert.items():
            index = _INDEX[column]
            value = values[index]
            # A JSON column is only ever JSON; the reason's own rule above comes first too.
            if value is not None and index not in _JSON_SET and index != _REASON_AT:
                values[index] = adapt(value)
    return tuple(values)


def encode_record(
    record: ScoreRecord, *, convert: Mapping[str, Callable[[Any], Any]] | None = None
) -> tuple[Any, ...]:
    """`encode_row(record.to_row(), dumps=stored_json, convert=convert)`, in one pass: unless a
    redactor replaces something in the run, the row is not walked before its JSON columns are
    written; each JSON text is checked instead (`storable_json`), and each other column made
    `storable` alone."""
    return _encode_record(record, convert, _trusts_plain(record))


def _trusts_plain(record: ScoreRecord) -> bool:
    """Whether `record`'s row is written from its call's input and output as they are: a call
    marked `plain_json`, and no privacy policy (whose redactor reads the JSON-ready copies)."""
    return record.call.plain_json and record.redaction is None


def _encode_record(
    record: ScoreRecord, convert: Mapping[str, Callable[[Any], Any]] | None, plain: bool
) -> tuple[Any, ...]:
    if record.redaction is None:
        # `_to_row(walk=False)`'s values without its dictionary: the row's own values and its
        # call's columns, made storable as `_to_row` makes them without a redactor.
        values = record._row_values(plain)
        call = record.call
        result = record.result
        if (
            call.request_context is None
            and call.ground_truth is None
            and not call.metadata
            and not call.run_id
            and call.score_source != "trace"
            and (result is None or result.not_scorable is None)
        ):
            # A run whose call brings nothing to its metadata (most live calls): `_metadata`
            # makes only the row's flag, and the request context stays None; told here from
            # the call's fields, without `_call_parts`' JSON-ready copies of nothing.
            values[_METADATA_AT] = _PLAIN_METADATA
        else:
            truth, extra, context, not_scorable = record._call_parts()
            if context is not None:
                values[_CONTEXT_AT] = storable(context, redact=True)
            values[_METADATA_AT] = record._metadata(truth, extra, not_scorable, False, None)
    else:
        row, redacted = record._to_row(walk=False, plain=plain)
        if redacted:  # walked already, with the redactor
            return encode_row(row, dumps=stored_json, convert=convert)
        # A redactor that finds nothing to replace in this run (its texts scanned): the row
        # is then the one a run without a policy makes, encoded the same way. (`_row` made
        # its columns in `SCORE_COLUMNS` order: its values are the row's.)
        values = list(row.values())
    written = _written_once(record, values)
    if plain:
        content = _plain_content_json(values)
        if content is None:  # not plain JSON after all (changed in place since): as any call
            return _encode_record(record, convert, plain=False)
        written.update(content)
    return _encode_values(
        values,
        dumps=storable_json,
        convert=convert,
        clean=_storable_column,
        written=written,
    )


_INPUT_AT: Final = _INDEX["input"]
_CONTEXT_AT: Final = _INDEX["requestContext"]
_OUTPUT_AT: Final = _INDEX["output"]


def _plain_content_json(values: list[Any]) -> dict[int, str] | None:
    """The texts of the row's input and output (`values`, in `SCORE_COLUMNS` order), the
    call's own plain JSON values, by column index (their values set to None for
    `_encode_values` to leave them); None when one holds what JSON does not write as it is
    (`plain_storable_json`)."""
    written: dict[int, str] = {}
    for index in (_INPUT_AT, _OUTPUT_AT):
        value = values[index]
        if value is not None:
            text = plain_storable_json(value)
            if text is None:
                return None
            written[index] = text
            values[index] = None
    return written


# JSON texts a row shares with many others, written once: the `scorer` column (the same for
# every run of a scorer: ~170 characters, escaped one by one, ~17k instructions a row), a live
# call's `entity` (the same for every call to an agent), the metadata of a call that brings
# none, the empty list of completed steps. The scorer's and the agent's texts are remembered
# together, under one key (the scorer's fields, the agent, whether the call is live), each the
# `storable_json` of the value `_row` builds from them, so it is the text that value is
# written as (a trace's call: no entity text, its entity names its span). Keys hold only text,
# booleans and None (`True == 1 == 1.0` hash alike but are written apart, so no numbers);
# bounded, so many scorers or agents only stop being remembered.
_ONCE: Final[BoundedMemo[tuple[str | bool | None, ...], tuple[str, str | None]]] = BoundedMemo()
_ONCE_KEY_TYPES: Final = frozenset({str, bool, type(None)})
_SCORER_AT: Final = _INDEX["scorer"]
_ENTITY_AT: Final = _INDEX["entity"]
_METADATA_AT: Final = _INDEX["metadata"]
_COMPLETED_AT: Final = _INDEX["completedSteps"]
# The metadata of a run whose call brings none (read, never changed), and its text.
_PLAIN_METADATA: Final[Mapping[str, Any]] = {"structuredOutput": False}
_PLAIN_METADATA_JSON: Final = storable_json(_PLAIN_METADATA)
_NO_STEPS_JSON: Final = storable_json([])


# A call's own metadata, made storable with secret-looking keys redacted, by what it holds: a
# trace's runs carry a few (span name, type, convention, service, tool names) that many rows
# share, and the walk costs a row tens of thousands of instructions. Only metadata of text,
# booleans, None and lists of text is remembered (no numbers: `True == 1`), keyed by its items
# in order; the rows that read it (`encode_record`, `record_json`) are encoded at once, never
# changed. Bounded as `_ONCE` is.
_CLEANED: Final[BoundedMemo[tuple[tuple[str, Any], ...], dict[str, Any]]] = BoundedMemo()
_TEXT_ONLY: Final = frozenset({str})


def _cleaned_once(metadata: dict[str, Any]) -> dict[str, Any] | None:
    """`storable(metadata, redact=True)` of flat metadata (`_CLEANED`), else None."""
    key: list[tuple[str, Any]] = []
    for name, value in metadata.items():
        kind = type(value)
        if type(name) is not str:
            return None
        if kind is list:
            if not _TEXT_ONLY.issuperset(map(type, value)):
                return None
            value = tuple(value)
        elif kind not in _ONCE_KEY_TYPES:
            return None
        key.append((name, value))
    found = _CLEANED.get(frozen := tuple(key))
    if found is None:
        found = _CLEANED.remember(frozen, storable(metadata, redact=True))
    return found


def _shared_texts(values: list[Any], live: bool) -> tuple[str, str | None]:
    """The texts of the row's `scorer` and, for a live call, `entity` (`values`, in
    `SCORE_COLUMNS` order), as `_ONCE` remembers them."""
    return storable_json(values[_SCORER_AT]), storable_json(values[_ENTITY_AT]) if live else None


def _written_once(record: ScoreRecord, values: list[Any]) -> dict[int, str]:
    """The texts of the row's columns that many rows share (`_ONCE`), by column index, their
    values (`values`, in `SCORE_COLUMNS` order) set to None for `_encode_values` to leave
    them."""
    call = record.call
    live = call.score_source != "trace"  # a trace's entity names its span: one per row
    key = (
        record.scorer_id,
        record.scorer_name,
        record.scorer_description,
        record.has_judge,
        record.scorer_declared_version,
        call.target if live else None,
        live,
    )
    # (The kinds of the key's parts told once: `issuperset` makes a set of them each time.)
    if _ONCE_KEY_TYPES.issuperset(map(type, key)):
        texts = _ONCE.get(key)
        if texts is None:
            texts = _ONCE.remember(key, _shared_texts(values, live))
    else:
        texts = _shared_texts(values, live)
    scorer_text, entity_text = texts
    written = {_SCORER_AT: scorer_text}
    values[_SCORER_AT] = None
    if entity_text is not None:
        written[_ENTITY_AT] = entity_text
        values[_ENTITY_AT] = None
    # Nothing but the flag `_to_row` starts with (a call's metadata holding only that flag,
    # False, is written alike). The key stays first when metadata updates it: no other text.
    metadata = values[_METADATA_AT]
    if len(metadata) == 1 and metadata.get("structuredOutput") is False:
        written[_METADATA_AT] = _PLAIN_METADATA_JSON
        values[_METADATA_AT] = None
    if not values[_COMPLETED_AT]:
        written[_COMPLETED_AT] = _NO_STEPS_JSON
        values[_COMPLETED_AT] = None
    return written


def record_json(record: ScoreRecord) -> str:
    """`stored_json(record.to_row())`, in one pass as `encode_record`: unless a redactor
    replaces something, the row is written first and walked only when its text shows
    something to clean (`storable_json`; the walk is the same either way, so the text is
    too)."""
    if _trusts_plain(record):
        text = plain_storable_json(record._to_row(walk=False, plain=True)[0])
        if text is not None:
            return text
        # Not plain JSON after all (changed in place since): as any call.
    row, redacted = record._to_row(walk=False)
    return stored_json(row) if redacted else storable_json(row)


def _storable_column(value: Any) -> Any:
    """`storable(value)` of a column that is not JSON, the common kinds told first."""
    kind = type(value)
    if kind is str:
        return storable_text(value)
    if kind is int or kind is bool or (kind is float and isfinite(value)):
        return value  # (a score: a finite float, as `storable` would return it)
    return storable(value)  # a number JSON cannot write, any other value


def decode_row(
    columns: Sequence[str], values: Sequence[Any], convert: Mapping[str, Callable[[Any], Any]]
) -> dict[str, Any]:
    """A stored row back as `to_row()` had it: `convert` maps a column to the function that
    undoes its encoding (applied to values that are not None)."""
    decoded: dict[str, Any] = {}
    for column, value in zip(columns, values, strict=True):
        if value is not None and column in convert:
            decoded[column] = convert[column](value)
        else:
            decoded[column] = value
    return decoded
