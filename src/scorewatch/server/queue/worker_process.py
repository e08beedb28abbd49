"""Running `scorewatch worker` as a process: build the scorers and sinks of the shared config,
consume until SIGTERM/SIGINT, finish the runs in flight (within `server.shutdown_timeout`),
close the sinks, flush telemetry, exit 0. Unfinished runs stay unacknowledged in the stream,
where another worker reclaims them."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import signal
import sys
from typing import Any

from ...sinks.storable import redact_url_credentials
from ..config.budget_settings import build_budgets
from ..config.cache_settings import install_configured_caching
from ..config.file import ConfigError, ServeConfig, queue_url
from ..config.process_logging import configure_process_logging
from ..config.scorer_entries import build_scorers
from ..config.stores import build_stores
from .dependencies import require_dependencies

__all__ = ["run_worker"]

logger = logging.getLogger("scorewatch.worker")


def _configure_telemetry(config: ServeConfig, metrics_listen: str | None) -> Any:
    settings = config.telemetry
    if metrics_listen is None and settings.otlp is False:
        return None
    from ... import telemetry

    return telemetry.configure(
        service_name=f"{settings.service_name}-worker",
        prometheus=metrics_listen,
        otlp=settings.otlp,
        capture_content=settings.capture_content,
    )


def run_worker(
    config: ServeConfig,
    *,
    concurrency: int | None = None,
    consumer: str | None = None,
    metrics_listen: str | None = None,
) -> int:
    configure_process_logging(config)
    url = queue_url(config)
    if url is None:
        raise ConfigError(
            "no work queue: pass --queue redis://HOST:PORT/DB or set [queue] url / url_env"
        )
    built = build_scorers(config)
    scorers = {configured.id: configured.scorer for configured in built}
    review_rates = {configured.id: configured.entry.review_rate for configured in built}
    install_configured_caching(config)
    require_dependencies(config)  # one line naming what is unreachable, not a traceback
    if any(scorer.has_judge for scorer in scorers.values()):
        # Load the judge client now rather than in the first run: otherwise the first entries
        # this worker takes stall for the seconds litellm needs to import.
        importlib.import_module("litellm")
    handle = _configure_telemetry(config, metrics_listen)
    try:
        stats = asyncio.run(
            _work(
                config,
                url,
                scorers,
                review_rates,
                concurrency=concurrency,
                consumer=consumer,
                handle=handle,
            )
        )
    finally:
        if handle is not None:
            handle.shutdown()
    print(
        f"scorewatch worker: stopped; accounting {json.dumps(stats, sort_keys=True)}",
        file=sys.stderr,
        flush=True,
    )
    return 0


async def _work(
    config: ServeConfig,
    url: str,
    scorers: dict[str, Any],
    review_rates: dict[str, float],
    *,
    concurrency: int | None,
    consumer: str | None,
    handle: Any,
) -> dict[str, int]:
    from .stream import StreamNames, connect
    from .worker import StreamWorker

    stores = build_stores(config)
    settings = config.queue
    client = connect(url, max_connections=settings.max_connections, timeout=settings.timeout)
    worker = StreamWorker(
        scorers,
        client=client,
        names=StreamNames.of(settings),
        sinks=stores.sinks,
        concurrency=concurrency or config.live.max_concurrency,
        visibility_timeout=settings.visibility_timeout,
        max_deliveries=settings.max_deliveries,
        claim_interval=settings.claim_interval,
        stats_interval=settings.stats_interval,
        consumer=consumer,
        privacy=config.privacy,
        review_rates=review_rates,
        budgets=build_budgets(config),
    )
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            logger.info("stopping: finishing the runs in flight")
            worker.stop()
        else:  # a second signal: stop waiting for the runs in flight
            for task in asyncio.all_tasks(loop):
                if task is not asyncio.current_task(loop):
                    task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    port = getattr(handle, "prometheus_port", None) if handle is not None else None
    print(
        f"scorewatch worker: consuming {settings.stream} at {redact_url_credentials(url)} as "
        f"{worker.consumer}" + (f"; metrics on port {port}" if port else ""),
        file=sys.stderr,
        flush=True,
    )
    try:
        return await worker.run(drain_timeout=config.server.shutdown_timeout)
    finally:
        for sink in stores.sinks:
            try:
                await sink.aclose()
            except Exception as error:
                logger.error("closing sink %r failed (%s)", sink.name, type(error).__name__)
        await client.aclose()
