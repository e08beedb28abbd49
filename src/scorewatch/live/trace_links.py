"""Extra span links for scorer runs started in the current context.

A run scored by a queue worker was asked for by an HTTP request in another process. The worker
restores that request's span context from the queue entry and makes it current here while the
run executes; the telemetry add-on adds it as a link of the run span, next to the link to the
evaluated agent span. Only the OpenTelemetry API is involved.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry.trace import SpanContext

__all__ = ["current_run_links", "linked_runs"]

_links: ContextVar[tuple[SpanContext, ...]] = ContextVar("scorewatch_run_links", default=())


def current_run_links() -> tuple[SpanContext, ...]:
    """Span contexts that runs started now should link to (valid ones only)."""
    return _links.get()


@contextmanager
def linked_runs(*contexts: SpanContext | None) -> Iterator[None]:
    """Runs started inside the block link to `contexts` (invalid or None ones are ignored)."""
    valid = tuple(c for c in contexts if c is not None and c.is_valid)
    token = _links.set(_links.get() + valid)
    try:
        yield
    finally:
        _links.reset(token)
