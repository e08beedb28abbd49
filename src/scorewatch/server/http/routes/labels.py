"""`POST /v1/labels` (human labels of stored runs) and `GET /v1/agreement` (judge vs people)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from ....evals.labelled import agreement_by_version
from ....sinks.labels import RunResolver, label_id
from ....sinks.storable import storable
from ..errors import ApiError
from ..label_intake import LabelsRefused, check_labels
from ..label_models import LabelBatch, LabelsStored
from ..models import ErrorBody
from ..state import ServiceState, service_of

__all__ = ["router"]

logger = logging.getLogger("scorewatch.server")

router = APIRouter(prefix="/v1", tags=["labels"])


def _resolver(service: ServiceState) -> RunResolver:
    reader = service.labels.reader if service.labels is not None else None
    if reader is None:
        raise ApiError(
            404,
            "no_label_store",
            "no store to keep labels in: enable [sinks] sqlite or postgres",
        )
    return reader


def _known(service: ServiceState, scorer: str) -> None:
    if scorer not in service.scorers:
        raise ApiError(
            404,
            "unknown_scorer",
            f"unknown scorer; known: {', '.join(service.known_scorers)}",
            known_scorers=service.known_scorers,
        )


def _unavailable(service: ServiceState, what: str, error: Exception, message: str) -> ApiError:
    """The 503 of a store that failed (logged with the error's type, never its message)."""
    logger.error("%s failed (%s)", what, type(error).__name__)
    return ApiError(
        503,
        "label_store_unavailable",
        f"{message}; retry later",
        retry_after=service.config.server.retry_after,
    )


def _admit(service: ServiceState, body: LabelBatch) -> None:
    """Spend the request's labels from its annotators' budgets, or refuse it whole (429)
    before it costs the store anything."""
    wanted = Counter(label.annotator for label in body.labels)
    refused = service.label_budget.admit(wanted)
    if refused is None:
        return
    index = next(i for i, label in enumerate(body.labels) if label.annotator == refused.annotator)
    raise ApiError(
        429,
        "too_many_labels",
        f"labels[{index}].annotator: past this annotator's budget of labels "
        f"({service.label_budget.rate:g} a second, {service.label_budget.burst:g} at once); "
        "nothing was stored",
        fields=[{"field": f"labels[{index}].annotator", "message": "over the label budget"}],
        retry_after=refused.retry_after,
    )


# What the two reading endpoints (agreement, review) answer besides 200.
_READ_ANSWERS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
    404: {"model": ErrorBody, "description": "Unknown scorer, or no label store."},
    503: {"model": ErrorBody, "description": "The label store cannot be read now."},
}


@router.post(
    "/labels",
    response_model=LabelsStored,
    summary="Store human labels of scored runs",
    description="Each label names a stored run (by `run_id`, or by target, trace and span id) "
    "of a configured scorer, and gives a `score` on the scorer's scale or a `verdict`: "
    "`pass`/`fail`, or one of the scorer's categories when it has them (a rubric-label "
    "scorer's choices; any other verdict is a 422 listing the allowed ones). One label per "
    "run, scorer and annotator: sending it again replaces that "
    "annotator's label and no other. All labels of a request are stored, or none.",
    responses={
        401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
        404: {"model": ErrorBody, "description": "Unknown scorer or run; `fields` names them."},
        413: {"model": ErrorBody, "description": "Body over server.max_body_bytes."},
        415: {"model": ErrorBody, "description": "Content-Type is not application/json."},
        422: {"model": ErrorBody, "description": "Invalid fields; `fields` names them."},
        429: {
            "model": ErrorBody,
            "description": "An annotator of the request is past their budget of labels "
            "(server.labels_per_second, server.label_burst); nothing was stored: retry after "
            "`Retry-After` seconds. Other annotators' labels are admitted meanwhile.",
        },
        503: {"model": ErrorBody, "description": "The label store cannot be written now."},
    },
)
async def submit_labels(body: LabelBatch, request: Request) -> JSONResponse:
    service = service_of(request)
    resolver = _resolver(service)
    _admit(service, body)
    scales = {sid: float(c.scorer.scale) for sid, c in service.scorers.items()}
    categories = {sid: c.scorer.categories for sid, c in service.scorers.items()}
    try:
        labels, runs = await check_labels(body.labels, scales, resolver, categories=categories)
    except LabelsRefused as refused:
        extra: dict[str, Any] = {"fields": refused.problems}
        if refused.code == "unknown_scorer":
            extra["known_scorers"] = service.known_scorers
        raise ApiError(refused.status, refused.code, str(refused), **extra) from None
    except Exception as error:
        message = "the label store cannot be read now"
        raise _unavailable(service, "looking up labelled runs", error, message) from None
    assert service.labels is not None
    try:
        for store in service.labels.writers:
            await store.put(labels)
    except Exception as error:
        message = "the labels could not be stored"
        raise _unavailable(service, "storing labels", error, message) from None
    if service.agreement is not None:
        service.agreement.stored(labels)
    stored = [
        {
            "id": label_id(label.run_id, label.scorer_id, label.annotator),
            "run_id": label.run_id,
            "scorer": label.scorer_id,
            "annotator": label.annotator,
            "scorer_version": run.scorer_version,
        }
        for label, run in zip(labels, runs, strict=True)
    ]
    return JSONResponse({"stored": len(stored), "labels": stored})


@router.get(
    "/agreement",
    summary="How well a scorer agrees with its human labels",
    description="Per scorer version: Cohen's kappa, accuracy, confusion and false-pass/"
    "false-fail rates for pass/fail labels (over the categories, for a scorer that has them: "
    "the judge's category is the one of its stored score); Spearman, mean absolute error and "
    "pass/fail "
    "agreement at `threshold` for labels on the scale; each with a 95% interval and the "
    "number of labels, and the runs where judge and people differ most.",
    responses=_READ_ANSWERS,
)
async def agreement(
    request: Request,
    scorer: str = Query(..., min_length=1, max_length=64, description="The scorer id."),
    threshold: float | None = Query(
        None, allow_inf_nan=False, description="Pass mark on the scale (default: half of it)."
    ),
    since: datetime | None = Query(  # noqa: B008 - FastAPI's way of declaring a parameter
        None, description="Only labels given or changed at or after."
    ),
) -> JSONResponse:
    service = service_of(request)
    resolver = _resolver(service)
    _known(service, scorer)
    configured = service.scorers[scorer]
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    top = float(configured.scorer.scale)
    cut = top / 2 if threshold is None else threshold
    try:
        runs = await resolver.labelled(scorer, since=since)
    except Exception as error:
        message = "the label store cannot be read now"
        raise _unavailable(service, "reading labels", error, message) from None
    higher = configured.scorer.direction == "higher_is_better"
    # The statistics are CPU work: never on the loop that serves requests.
    reports = await asyncio.to_thread(
        agreement_by_version,
        scorer,
        runs,
        threshold=cut,
        scale=top,
        higher_passes=higher,
        categories=configured.scorer.categories,
    )
    return JSONResponse(
        {"scorer": scorer, "threshold": cut, "versions": [r.as_dict() for r in reports]}
    )


@router.get(
    "/review",
    summary="Runs waiting for a human label",
    description="The runs of `scorer` in its review sample (`review_rate` of its scorer entry, "
    "chosen from the run id and marked in the score row when the run was scored) that nobody "
    "has labelled yet, newest first, with what is stored of them, and the sample's counts "
    "(`marked`, `labelled`, `pending`). A label (`POST /v1/labels`) takes a run off the list.",
    responses=_READ_ANSWERS,
)
async def review(
    request: Request,
    scorer: str = Query(..., min_length=1, max_length=64, description="The scorer id."),
    limit: int = Query(50, ge=1, le=500, description="At most this many runs."),
) -> JSONResponse:
    service = service_of(request)
    resolver = _resolver(service)
    _known(service, scorer)
    rate = service.scorers[scorer].entry.review_rate
    try:
        pending = await resolver.review_pending(scorer, limit=limit)
        counts = await resolver.review_counts(scorer)
    except Exception as error:
        message = "the store cannot be read now"
        raise _unavailable(service, "reading runs for review", error, message) from None
    body = {"scorer": scorer, "review_rate": rate, **counts.as_dict(), "runs": pending}
    return JSONResponse(storable(body))
