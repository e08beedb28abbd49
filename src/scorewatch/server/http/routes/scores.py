"""`POST /v1/scores`, `POST /v1/scores:batch`, `GET /v1/scores`."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from ....sinks.base import ScoreOrder, ScoreQuery
from ....sinks.record import ScoreRecord
from ....sinks.storable import non_finite_path, storable
from ...config.file import key_path
from ...intake.admission import BAD_ID_MESSAGE as _BAD_ID_MESSAGE
from ...intake.admission import BAD_ID_TEXT as _BAD_ID_TEXT
from ...intake.admission import MAX_TARGET_CHARS
from ...intake.interface import Admission, IntakeClosedError, QueueFullError, ScoreItem
from ...intake.redis_queue import IntakeUnavailableError, OutcomeUnknownError
from ..errors import ApiError
from ..guard import BODY_BYTES_KEY
from ..models import (
    BatchAccepted,
    BatchRequest,
    ErrorBody,
    RunReport,
    ScoreAccepted,
    ScoreList,
    ScoreRequest,
    ScoreResults,
    SkippedRun,
)
from ..score_pages import BadCursorError, ScorePage, decode_cursor
from ..state import ServiceState, service_of

__all__ = ["router"]

# A number that may be past a double's range: a three-digit exponent or 309 digits in a row.
_HUGE_NUMBER: Final = re.compile(rb"[0-9][eE]\+?[0-9]{3}|[0-9]{309}")

logger = logging.getLogger("scorewatch.server")

# The bearer-token dependency is added by `create_app` when the service has a token.
router = APIRouter(prefix="/v1", tags=["scores"])

_REFUSALS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
    404: {"model": ErrorBody, "description": "Unknown scorer id; `known_scorers` lists them."},
    413: {"model": ErrorBody, "description": "Body over server.max_body_bytes (default 1 MiB)."},
    415: {"model": ErrorBody, "description": "Content-Type is not application/json."},
    422: {"model": ErrorBody, "description": "Invalid JSON or fields; `fields` names them."},
    429: {"model": ErrorBody, "description": "Queue full; retry after `Retry-After` seconds."},
    503: {
        "model": ErrorBody,
        "description": "Shutting down, or the work queue is unreachable (nothing accepted), or "
        "`outcome_unknown`: the queue did not confirm the append (`runs` lists the run ids).",
    },
}


def _body_bytes(request: Request) -> int:
    return int(request.scope.get(BODY_BYTES_KEY, 0))


def _item_of(request: ScoreRequest, size: int = 0) -> ScoreItem:
    scorers = tuple(request.scorers) if request.scorers is not None else None
    return ScoreItem(request.to_call(), scorers, size)


def _check_values(requests: Sequence[ScoreRequest], raw: bytes, prefix: str = "") -> None:
    """Strict JSON at the boundary: NaN and Infinity (which Python's JSON reader accepts), and
    numbers past a double's range (`1e400`, which it reads as infinity), are refused with the
    field that holds them, and identifiers may hold no NUL characters or unpaired surrogates.
    Text content may hold anything: the sinks store it (see docs)."""
    # Only a body spelling one of those can hold such a number: most are not walked.
    maybe_non_finite = b"NaN" in raw or b"Infinity" in raw or _HUGE_NUMBER.search(raw) is not None
    problems: list[dict[str, str]] = []
    for index, request in enumerate(requests):
        item = f"items[{index}]." if prefix else ""
        for name in request.ID_FIELDS:
            value = getattr(request, name)
            if isinstance(value, str) and _BAD_ID_TEXT.search(value):
                problems.append({"field": f"{item}{name}", "message": _BAD_ID_MESSAGE})
        for position, scorer_id in enumerate(request.scorers or ()):
            if _BAD_ID_TEXT.search(scorer_id):
                field = f"{item}scorers[{position}]"
                problems.append({"field": field, "message": _BAD_ID_MESSAGE})
        for name in request.CONTENT_FIELDS if maybe_non_finite else ():
            where = non_finite_path(getattr(request, name))
            if where is not None:
                problems.append(
                    {
                        "field": key_path([f"{item}{name}", *where]),
                        "message": "NaN, Infinity and numbers past a double's range are "
                        "not stored as numbers; send a finite number, null or a string",
                    }
                )
    if problems:
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
        raise ApiError(422, "invalid_request", summary, fields=problems)


# An unknown scorer id is echoed back so the client sees its typo, but only so much of it.
_SHOWN_ID_CHARS = 64
_SHOWN_IDS = 5


def _shown(scorer_id: str) -> str:
    if len(scorer_id) > _SHOWN_ID_CHARS:
        return repr(scorer_id[:_SHOWN_ID_CHARS]) + "…"
    return repr(scorer_id)


def _check_scorers(service: ServiceState, requests: Sequence[ScoreRequest]) -> None:
    unknown: list[str] = []
    for request in requests:
        for scorer_id in request.scorers or ():
            if scorer_id not in service.scorers and scorer_id not in unknown:
                unknown.append(scorer_id)
    if unknown:
        known = service.known_scorers
        shown = ", ".join(_shown(s) for s in unknown[:_SHOWN_IDS])
        if len(unknown) > _SHOWN_IDS:
            shown += f" and {len(unknown) - _SHOWN_IDS} more"
        raise ApiError(
            404,
            "unknown_scorer",
            f"unknown scorer{'s' if len(unknown) > 1 else ''} {shown}; known: {', '.join(known)}",
            known_scorers=known,
        )


async def _admit(
    service: ServiceState, items: Sequence[ScoreItem], *, want_results: bool = False
) -> list[Admission]:
    retry = service.config.server.retry_after
    try:
        return await service.intake.admit(items, want_results=want_results)
    except QueueFullError as full:
        if full.needed > full.capacity:
            raise ApiError(
                413,
                "batch_too_large",
                f"the request needs {full.needed} queue slots, more than the queue holds "
                f"({full.capacity}); split it",
            ) from None
        reason = full.detail or (
            f"the scoring queue is full ({full.needed} slot(s) needed, {full.free} free)"
        )
        # When the intake knows how long the queue needs to make room, say so (capped).
        wait = retry if full.retry_after is None else min(max(retry, full.retry_after), 60)
        raise ApiError(
            429,
            "queue_full",
            f"{reason}; retry after {wait}s",
            retry_after=wait,
        ) from None
    except OutcomeUnknownError as unknown:
        raise ApiError(
            503,
            "outcome_unknown",
            "the work queue did not confirm the append: the runs may or may not have been "
            "accepted; retry the same request (same trace/span or run ids give the same run "
            "ids, stored once) or look the run ids up",
            retry_after=retry,
            runs=[
                {"item": index, "scorer": scorer, "run_id": run_id}
                for index, scorer, run_id in unknown.runs
            ],
        ) from None
    except IntakeUnavailableError:
        raise ApiError(
            503,
            "queue_unavailable",
            "the work queue cannot be reached; nothing was accepted, retry later",
            retry_after=retry,
        ) from None
    except IntakeClosedError:
        raise ApiError(
            503,
            "shutting_down",
            "the service is shutting down and accepts no new requests",
            headers={"Connection": "close"},
            retry_after=retry,
        ) from None


def _accepted_body(admission: Admission) -> dict[str, Any]:
    return {
        "accepted": [{"scorer": a.scorer, "run_id": a.run_id} for a in admission.accepted],
        "skipped": [{"scorer": s.scorer, "decision": s.decision} for s in admission.skipped],
    }


def _outcome(scorer: str, run_id: str, future: asyncio.Future[ScoreRecord]) -> RunReport:
    if not future.done():
        return RunReport(scorer=scorer, run_id=run_id, status="pending")
    if future.cancelled():
        return RunReport(scorer=scorer, run_id=run_id, status="dropped")
    result = future.result()
    # `kept`: the answer shows the run as it is stored (redacted under a privacy policy).
    skipped = result.not_scorable
    return RunReport(
        scorer=scorer,
        run_id=run_id,
        status=result.status,
        score=result.score,
        not_scorable=None
        if skipped is None
        else type(skipped).model_validate(result.kept(skipped)),
        reason=result.kept(result.reason) if result.status == "success" else None,
        error=result.kept(result.error),
        error_code=result.error_code,
        failed_step=result.failed_step,
    )


@router.post(
    "/scores",
    status_code=202,
    response_model=None,
    summary="Score one input/output pair",
    description="Decides per scorer (filter, then sampling on the trace id) and queues the "
    "sampled runs; answers 202 before any judge call. With `wait=true`, waits for the results "
    "(at most `timeout` seconds, capped by server.wait_timeout) and answers 200.",
    responses={
        202: {"model": ScoreAccepted, "description": "Queued (and skipped) scorer runs."},
        200: {"model": ScoreResults, "description": "`wait=true`: the results."},
        **_REFUSALS,
    },
)
async def submit_score(
    body: ScoreRequest,
    request: Request,
    wait: bool = Query(False, description="Wait for the results instead of answering 202."),
    timeout: float | None = Query(  # noqa: ASYNC109 - a query parameter, not a deadline
        None, gt=0, description="Longest wait in seconds with `wait=true`."
    ),
) -> JSONResponse:
    service = service_of(request)
    _check_values([body], await request.body())
    _check_scorers(service, [body])
    item = _item_of(body, _body_bytes(request))
    (admission,) = await _admit(service, [item], want_results=wait)
    if not wait:
        return JSONResponse(_accepted_body(admission), status_code=202)
    limit = service.config.server.wait_timeout
    budget = min(timeout, limit) if timeout is not None else limit
    futures = admission.results or {}
    if futures:
        await asyncio.wait(list(futures.values()), timeout=budget)
    by_run = {a.run_id: a.scorer for a in admission.accepted}
    outcomes = [_outcome(by_run[run_id], run_id, f) for run_id, f in futures.items()]
    results = ScoreResults(
        results=outcomes,
        skipped=[SkippedRun(scorer=s.scorer, decision=s.decision) for s in admission.skipped],
        complete=all(o.status != "pending" for o in outcomes),
    )
    # storable: a reason or error quoting content may hold text JSON cannot encode as UTF-8.
    return JSONResponse(storable(results.model_dump(mode="json")), status_code=200)


@router.post(
    "/scores:batch",
    status_code=202,
    response_model=BatchAccepted,
    summary="Score up to 1,000 pairs in one request",
    description="Every item is decided as in `POST /v1/scores`; the request is admitted "
    "whole or refused whole (429), so a retry never duplicates work.",
    responses={202: {"description": "Decisions per item, in request order."}, **_REFUSALS},
)
async def submit_batch(body: BatchRequest, request: Request) -> JSONResponse:
    service = service_of(request)
    limit = service.config.server.max_batch_items
    if len(body.items) > limit:
        raise ApiError(
            422,
            "invalid_request",
            f"items: at most {limit} items per batch (server.max_batch_items), got "
            f"{len(body.items)}",
            fields=[{"field": "items", "message": f"at most {limit} items"}],
        )
    _check_values(body.items, await request.body(), prefix="items")
    _check_scorers(service, body.items)
    share = _body_bytes(request) // len(body.items)
    admissions = await _admit(service, [_item_of(item, share) for item in body.items])
    items = [_accepted_body(admission) for admission in admissions]
    return JSONResponse(
        {
            "items": items,
            "accepted": sum(len(a.accepted) for a in admissions),
            "skipped": sum(len(a.skipped) for a in admissions),
        },
        status_code=202,
    )


@router.get(
    "/scores",
    response_model=ScoreList,
    summary="Stored results, a page at a time",
    description="Reads the result store (PostgreSQL when configured, else SQLite): newest "
    "first, or by score (`order=score_asc` lists the lowest scores first; rows without a "
    "score are left out). `since` is inclusive (ISO 8601; a time without zone is UTC). A page "
    "holds at most `limit` rows and about 8 MiB; `next`, when not null, is the `cursor` of the "
    "following page.",
    responses={
        401: _REFUSALS[401],
        404: {"model": ErrorBody, "description": "No result store configured."},
        422: {"model": ErrorBody, "description": "A bad filter or cursor; `fields` names it."},
        429: {
            "model": ErrorBody,
            "description": "`too_many_readers`: server.max_readers pages are being read.",
        },
        503: {"model": ErrorBody, "description": "The result store cannot be read right now."},
    },
)
async def list_scores(
    request: Request,
    target: str | None = Query(None, max_length=MAX_TARGET_CHARS, description="Only this target."),
    scorer: str | None = Query(None, max_length=64, description="Only this scorer id."),
    since: datetime | None = Query(  # noqa: B008 - FastAPI's way of declaring a parameter
        None, description="Only results created at or after."
    ),
    status: Literal["success", "not_scorable", "failed"] | None = Query(
        None, description="Only this status."
    ),
    min_score: float | None = Query(
        None, description="Only scores at or above.", allow_inf_nan=False
    ),
    max_score: float | None = Query(
        None, description="Only scores at or below.", allow_inf_nan=False
    ),
    order: ScoreOrder = Query(  # noqa: B008 - FastAPI's way of declaring a parameter
        "newest", description="newest, score_asc (lowest first) or score_desc."
    ),
    limit: int = Query(100, ge=1, le=1000, description="At most this many rows."),
    cursor: str | None = Query(
        None, max_length=1024, description="`next` of the previous page: continue after it."
    ),
) -> StreamingResponse:
    service = service_of(request)
    if service.reader is None:
        raise ApiError(
            404,
            "no_result_store",
            "no result store to read from: [sinks] sqlite is disabled",
        )
    problems = [
        {"field": f"query.{name}", "message": _BAD_ID_MESSAGE}
        for name, value in (("target", target), ("scorer", scorer))
        if value is not None and _BAD_ID_TEXT.search(value)
    ]
    after = None
    if cursor is not None:
        try:
            after = decode_cursor(cursor, order)
        except BadCursorError as error:
            problems.append({"field": "query.cursor", "message": str(error)})
    if problems:
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise ApiError(422, "invalid_request", summary, fields=problems)
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    query = ScoreQuery(
        target=target,
        scorer=scorer,
        since=since,
        status=status,
        min_score=min_score,
        max_score=max_score,
        order=order,
        after=after,
    )
    readers = service.page_readers
    if not readers.take():
        raise ApiError(
            429,
            "too_many_readers",
            f"{readers.limit} pages are being read (server.max_readers); retry after "
            f"{service.config.server.retry_after}s",
            retry_after=service.config.server.retry_after,
        )
    page = ScorePage(service.reader, limit, query)
    try:
        await page.start()
    except Exception as error:
        readers.give_back()
        logger.error("reading the result store failed (%s)", type(error).__name__)
        retry = service.config.server.retry_after
        raise ApiError(
            503,
            "result_store_unavailable",
            "the result store cannot be read right now; retry later",
            retry_after=retry,
        ) from None
    return _PageResponse(page.body(), readers.give_back)


class _PageResponse(StreamingResponse):
    """A streamed page that gives its reader slot back however it ends (sent, failed, the
    client gone before or during the answer)."""

    def __init__(self, body: AsyncIterator[bytes], done: Callable[[], None]) -> None:
        super().__init__(body, media_type="application/json")
        self._done = done

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._done()
