"""The FastAPI application: `build_service(config)` assembles the parts, `create_app(service)`
wires the routes, the guard and the shutdown sequence."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from starlette.routing import Route

from ..._asgi import Receive, Scope, Send
from ..._version import __version__
from ...sinks.delivery import close_sinks
from ..config.cache_settings import install_configured_caching
from ..config.file import ServeConfig
from ..config.label_stores import build_label_stores
from ..config.scorer_entries import build_scorers
from ..config.stores import SinkProbe, build_stores
from ..intake.choice import build_intake
from ..intake.otlp_traces import TracesIntake, build_traces_intake
from ..intake.redis_queue import RedisIntake
from .agreement_watch import AgreementWatch, ScorerScale
from .auth import require_token, resolve_token
from .docs_page import install_docs_page
from .errors import install_error_handlers
from .guard import ServiceGuard
from .routes import labels, probes, score_intake, scorers, scores, traces
from .state import ServiceState

__all__ = ["ServiceApp", "build_service", "create_app", "shutdown_service"]

logger = logging.getLogger("scorewatch.server")

_DESCRIPTION = """\
Scores traffic of agents written in any language. POST each input/output pair to
`/v1/scores`; the configured scorers decide (filter, then sampling on the trace id), queue the
sampled runs and answer **202 before any judge call**. Results land in the configured sinks
(`GET /v1/scores` reads the SQLite one) and in the Prometheus metrics at `/metrics`.

Every refusal has the same JSON shape (`ErrorBody`): 401 bad token, 404 unknown scorer, 408 body
too slow, 413 body too large, 415 body not declared JSON, 422 invalid field (named), 429 queue
full (with `Retry-After`), 503 shutting down.
"""


class ServiceApp(FastAPI):
    """FastAPI with serve's guard (`guard.py`) in front of all of it, Starlette's own middleware
    included: what the guard refuses or answers itself (the plain `POST /v1/scores`) costs none
    of the layers it never needs (the error middleware, FastAPI's telemetry and body-limit
    wrappers). What escapes the guard's own code is answered 500 by the server, as Starlette's
    error middleware would."""

    guard: ServiceGuard | None = None
    """Set by `create_app`; None: a plain FastAPI application."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = self.guard
        if guard is None:
            await super().__call__(scope, receive, send)
        else:
            await guard(scope, receive, send)

    async def beneath_guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The application the guard hands on to: FastAPI, its middleware, the routes."""
        await super().__call__(scope, receive, send)


def build_service(config: ServeConfig) -> ServiceState:
    """Build scorers, sinks and the intake; raises `ConfigError` for a bad configuration."""
    token = resolve_token(config)
    built = {configured.id: configured for configured in build_scorers(config)}
    install_configured_caching(config)
    stores = build_stores(config)
    entries = {scorer_id: configured.entry for scorer_id, configured in built.items()}
    intake = build_intake(config, entries, stores)
    dependencies: list[SinkProbe] = []
    if isinstance(intake, RedisIntake):
        dependencies.append(intake.probe())
    intake = build_traces_intake(config, intake, entries)
    service = ServiceState(
        config=config,
        scorers=built,
        intake=intake,
        reader=stores.reader,
        probes=stores.probes,
        token=token,
        dependencies=dependencies,
        labels=build_label_stores(config),
    )
    if stores.readers:
        service.on_close.append(functools.partial(close_sinks, stores.readers))
    if service.labels is not None and service.labels.reader is not None:
        scales = {
            scorer_id: ScorerScale(
                float(c.scorer.scale),
                c.scorer.direction == "higher_is_better",
                c.entry.review_rate,
                c.scorer.categories,
            )
            for scorer_id, c in built.items()
        }
        service.agreement = AgreementWatch(scales, service.labels.reader)
        service.on_close.append(service.agreement.aclose)
    return service


async def shutdown_service(service: ServiceState) -> dict[str, int]:
    """Refuse new work, drain within server.shutdown_timeout (the rest is counted as
    dropped_shutdown), close the sinks, flush the exporters. Safe to call twice."""
    service.draining = True
    await service.intake.shutdown(service.config.server.shutdown_timeout)
    await service.intake.aclose()
    callbacks, service.on_close = service.on_close, []
    for callback in callbacks:
        try:
            outcome = callback()
            if asyncio.iscoroutine(outcome):
                await outcome
        except Exception as error:
            logger.error("shutdown step failed (%s)", type(error).__name__)
    return service.stats()


def create_app(service: ServiceState) -> ServiceApp:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if service.agreement is not None:
            service.agreement.start()
        yield
        await shutdown_service(service)

    docs = service.config.server.docs
    app = ServiceApp(
        title="scorewatch",
        version=__version__,
        summary="Score AI agents' outputs with LLM judges and watch those scores in production.",
        description=_DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # install_docs_page: the same page without a CDN
        redoc_url=None,
        openapi_url="/openapi.json" if docs else None,
        # FastAPI's own OpenTelemetry instrumentation (0.16x) records validation failures with
        # their input values and a span per dependency: content must not leave the process,
        # and per-request spans would cost more than scoring's own telemetry. Older FastAPI
        # versions keep unknown keywords as extras.
        telemetry={
            "tracing": False,
            "metrics": False,
            "logs": False,
            "operation_spans": False,
            "auto_configure": False,
        },
        openapi_tags=[
            {"name": "scores", "description": "Submit traffic to score and read results."},
            {"name": "labels", "description": "Human labels and the judge's agreement."},
            {"name": "service", "description": "What the service runs and how it is doing."},
            {"name": "probes", "description": "Liveness, readiness, Prometheus metrics."},
        ],
    )
    app.state.service = service
    install_error_handlers(app)
    if docs:
        install_docs_page(app, openapi_url="/openapi.json", title="scorewatch API")
    guarded = [Depends(require_token)] if service.token is not None else []
    app.include_router(scores.router, dependencies=guarded)
    app.include_router(scorers.router, dependencies=guarded)
    app.include_router(labels.router, dependencies=guarded)
    if isinstance(service.intake, TracesIntake):
        app.include_router(traces.router, dependencies=guarded)
    app.include_router(probes.router)
    if service.config.telemetry.prometheus:
        from ...telemetry import prometheus_asgi_app

        registry: Any = None  # the configured one, looked up at each scrape
        if service.peers is not None:  # `serve --workers N`: every worker's, summed
            from ...telemetry.merged import MergedRegistry
            from ...telemetry.prometheus import default_registry

            registry = MergedRegistry(default_registry, service.peers.metrics_texts)
        exposition = prometheus_asgi_app(registry, max_age=service.config.telemetry.metrics_max_age)
        endpoint: Any = probes.MetricsEndpoint(exposition, service)
        app.router.routes.append(Route("/metrics", endpoint, methods=["GET"]))
    # The plain `POST /v1/scores` is answered by the guard itself (score_intake.py).
    app.guard = ServiceGuard(
        app.beneath_guard, state=service, plain_score=score_intake.answer_plain_score
    )
    return app
