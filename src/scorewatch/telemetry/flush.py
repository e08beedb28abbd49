"""Flushing the providers telemetry was given before the process may exit.

Called when live scoring closes (the bus's `flush` event): its last runs' spans, metrics and
evaluation events sit in batch processors and periodic readers until flushed. Only the
providers handed to `instrument()` are flushed; one left None there is the global one of its
signal, as `instrument()` itself uses it.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry import _logs, metrics, trace

__all__ = ["flush_providers"]

logger = logging.getLogger("scorewatch.telemetry")


def flush_providers(
    tracer_provider: Any, meter_provider: Any, logger_provider: Any, timeout: float | None
) -> None:
    """Flush each provider (any with a `force_flush`) within `timeout` seconds (default 30); a
    None provider is the global one of its signal, resolved now."""
    providers = (
        tracer_provider if tracer_provider is not None else trace.get_tracer_provider(),
        meter_provider if meter_provider is not None else metrics.get_meter_provider(),
        logger_provider if logger_provider is not None else _logs.get_logger_provider(),
    )
    millis = int((timeout if timeout is not None else 30.0) * 1000)
    for provider in providers:
        flush = getattr(provider, "force_flush", None)
        if not callable(flush):
            continue
        try:
            flush(millis)
        except TypeError:
            try:
                flush()
            except Exception:
                logger.debug("flushing %r failed", provider, exc_info=True)
        except Exception:
            logger.debug("flushing %r failed", provider, exc_info=True)
