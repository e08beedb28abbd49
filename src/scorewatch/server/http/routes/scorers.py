"""`GET /v1/scorers` and `GET /v1/stats`."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..models import ErrorBody, ScorerInfo, ScorerList, Stats
from ..state import service_of

__all__ = ["router"]

# The bearer-token dependency is added by `create_app` when the service has a token, so the
# OpenAPI document declares the security scheme exactly when it applies.
router = APIRouter(prefix="/v1", tags=["service"])

_UNAUTHORIZED = {401: {"model": ErrorBody, "description": "Missing or wrong bearer token."}}


@router.get(
    "/scorers",
    response_model=ScorerList,
    summary="The configured scorers",
    responses=_UNAUTHORIZED,  # type: ignore[arg-type]
)
async def list_scorers(request: Request) -> ScorerList:
    service = service_of(request)
    listed: list[ScorerInfo] = []
    for scorer_id in service.known_scorers:
        configured = service.scorers[scorer_id]
        scorer = configured.scorer
        rate = configured.entry.sampling.rate
        listed.append(
            ScorerInfo(
                id=scorer_id,
                name=scorer.name,
                description=scorer.description,
                source=configured.source,
                sampling=1.0 if rate is None else rate,
                has_judge=scorer.has_judge,
                judge_model=configured.judge_model,
                direction=scorer.direction,
                scale=float(scorer.scale),
                steps=scorer.get_steps(),
                filtered=configured.entry.filter is not None,
            )
        )
    return ScorerList(scorers=listed)


@router.get(
    "/stats",
    response_model=Stats,
    summary="Accounting of every decision and outcome since start",
    description="`sampled == scored + failed + dropped_shutdown + queued + in_flight` at all "
    "times; a refused request counts its sampled evaluations as `dropped_queue_full` (429) or "
    "`dropped_shutdown` (503) and adds one to `rejected_requests`; requests refused while "
    "draining, before any decision, count in `rejected_draining`. Without a queue, "
    "`sink_errors` counts failed sink writes, `sink_refused` rows a sink refused (stored as "
    "`unstorable` failures) and `sink_dropped` results a sink finally did not store.",
    responses=_UNAUTHORIZED,  # type: ignore[arg-type]
)
async def stats(request: Request) -> Stats:
    return Stats.model_validate(service_of(request).stats())
