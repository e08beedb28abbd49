"""What a live filter sees, and where live traffic sits in the caller's trace.

Only the OpenTelemetry API is used here (never the SDK): with no SDK configured there is no
current span, and the run id keys sampling instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.context import get_current

from ..core.result import ScoreSource

_SPAN_KEY: str | None
try:  # the context key the API stores the current span under (stable, but not exported)
    from opentelemetry.trace.propagation import _SPAN_KEY as _API_SPAN_KEY

    _SPAN_KEY = _API_SPAN_KEY
except ImportError:  # pragma: no cover - a future API without it: take the public path
    _SPAN_KEY = None

__all__ = ["LiveCall", "current_trace_ids"]


@dataclass(frozen=True, slots=True)
class LiveCall:
    """One piece of live traffic as seen by a filter (and stored with its results).

    `target` names the agent or workflow; `trace_id`/`span_id` locate the agent's span (hex, when
    known); `run_id` is the agent's own run or call id (generated when the caller gave none);
    `score_source` is `trace` for a call read from exported spans (serve's `/v1/traces`).
    """

    input: Any
    output: Any
    target: str | None
    trace_id: str | None
    span_id: str | None
    run_id: str
    request_context: Any = None
    ground_truth: Any = None
    metadata: dict[str, Any] | None = None
    score_source: ScoreSource = "live"


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
