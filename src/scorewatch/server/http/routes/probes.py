"""`GET /healthz`, `GET /readyz` and `GET /metrics` (open unless configured otherwise)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ...._asgi import ASGIApp, Receive, Scope, Send
from ..auth import check_authorization
from ..errors import error_response
from ..models import Health, Readiness
from ..state import ServiceState, service_of

__all__ = ["MetricsEndpoint", "readiness_checks", "router"]

router = APIRouter(tags=["probes"])


@router.get("/healthz", response_model=Health, summary="The process is up")
async def healthz() -> Health:
    return Health()


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Ready for traffic: accepting, queue not saturated, Redis (queue mode) answering, "
    "sinks writable",
    responses={503: {"model": Readiness, "description": "Not ready; `checks` says why."}},
)
async def readyz(request: Request) -> JSONResponse:
    service = service_of(request)
    checks = await readiness_checks(service)
    if service.peers is not None:  # `serve --workers N`: every worker, as `worker:<n>`
        checks.update(await service.peers.readiness())
    ready = all(checks.values())
    body = Readiness(status="ready" if ready else "not_ready", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


async def readiness_checks(service: ServiceState) -> dict[str, bool]:
    """This process's readiness checks, by name."""
    checks: dict[str, bool] = {
        "accepting": not service.draining,
        "queue": not service.intake.saturated(),
    }
    # Together: with two dependencies down, one probe timeout rather than the sum.
    named = [(p.name, p) for p in service.dependencies]
    named += [(f"sink:{p.name}", p) for p in service.probes]
    answers = await asyncio.gather(*(probe.writable() for _name, probe in named))
    checks.update({name: answer for (name, _probe), answer in zip(named, answers, strict=True)})
    return checks


class MetricsEndpoint:
    """The telemetry add-on's Prometheus ASGI app, behind the bearer token when configured.

    A class instance (not a function) so that Starlette routes to it as a raw ASGI app."""

    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self._app = app
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._state.config.telemetry.metrics_require_token:
            header = None
            for name, value in scope.get("headers", ()):
                if name == b"authorization":
                    header = value.decode("latin-1")
                    break
            if not check_authorization(self._state.token, header):
                response = error_response(
                    401,
                    "unauthorized",
                    "missing or invalid bearer token",
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)
