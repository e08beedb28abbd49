"""`POST /v1/scores`, `POST /v1/scores:batch`, `GET /v1/scores`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from ....sinks.base import ScoreOrder, ScoreQuery
from ....sinks.record import ScoreRecord
from ....sinks.storable import storable
from ...intake.admission import BAD_ID_MESSAGE as _BAD_ID_MESSAGE
from ...intake.admission import BAD_ID_TEXT as _BAD_ID_TEXT
from ...intake.admission import MAX_TARGET_CHARS
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
from ..state import service_of
from .score_intake import accepted_body, admit, check_scorers, check_values, item_of

__all__ = ["router"]

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
    check_values([body], await request.body())
    check_scorers(service, [body])
    item = item_of(service, body, _body_bytes(request))
    (admission,) = await admit(service, [item], want_results=wait)
    if not wait:
        return JSONResponse(accepted_body(admission), status_code=202)
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
    check_values(body.items, await request.body(), prefix="items")
    check_scorers(service, body.items)
    share = _body_bytes(request) // len(body.items)
    admissions = await admit(service, [item_of(service, item, share) for item in body.items])
    items = [accepted_body(admission) for admission in admissions]
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
