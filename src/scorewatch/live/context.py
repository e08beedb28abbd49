"""`LiveCall`: what a live filter sees, and what a live result stores of the call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LiveCall"]


@dataclass(frozen=True, slots=True)
class LiveCall:
    """One piece of live traffic as seen by a filter (and stored with its results).

    `target` names the agent or workflow; `trace_id`/`span_id` locate the agent's span (hex, when
    known); `run_id` is the agent's own run or call id (generated when the caller gave none).
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
