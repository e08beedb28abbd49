"""Flushing the installed OpenTelemetry providers before the process may exit.

Called when live scoring closes (the bus's `flush` event): its last runs' spans, metrics and
evaluation events sit in batch processors and periodic readers until flushed.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry import metrics, trace

__all__ = ["flush_providers"]

logger = logging.getLogger("scorewatch.telemetry")


def flush_providers(timeout: float | None) -> None:
    """Flush the global tracer, meter and logger providers (through the API getters; any
    provider with a `force_flush`), each within `timeout` seconds (default 30)."""
    providers: list[Any] = [trace.get_tracer_provider(), metrics.get_meter_provider()]
    try:
        from opentelemetry import _logs

        providers.append(_logs.get_logger_provider())
    except ImportError:  # older API without the logs bridge
        pass
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
