"""Where live traffic sits in the caller's trace.

Only the OpenTelemetry API is used here (never the SDK): with no SDK configured there is no
current span, and the run id keys sampling instead.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.context import get_current

_SPAN_KEY: str | None
try:  # the context key the API stores the current span under (stable, but not exported)
    from opentelemetry.trace.propagation import _SPAN_KEY as _API_SPAN_KEY

    _SPAN_KEY = _API_SPAN_KEY
except ImportError:  # pragma: no cover - a future API without it: take the public path
    _SPAN_KEY = None

__all__ = ["current_trace_ids"]


def current_trace_ids() -> tuple[str | None, str | None]:
    """The current span's (trace id, span id) as lowercase hex, or (None, None)."""
    if _SPAN_KEY is not None and get_current().get(_SPAN_KEY) is None:
        # No span at all (the common case without tracing): answered without the API's
        # lookup chain, which costs a watched call about as much as the rest of its decision.
        return None, None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")
