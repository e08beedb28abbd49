"""Deterministic ids for live scorer runs (spec §8): one id per (scorer, trace or run, span)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any
from uuid import uuid4

__all__ = ["RunIdIssuer", "live_run_id", "request_digest", "request_run_id"]


def live_run_id(
    scorer_id: str,
    trace_id: str | None,
    run_id: str | None,
    span_id: str | None,
    entity_id: str | None,
) -> str:
    """`scoring-<scorerId>-<traceId|runId>-<spanId|entityId>`; a random uuid if both are missing."""
    first = trace_id or run_id
    second = span_id or entity_id
    if not first and not second:
        return str(uuid4())
    return f"scoring-{scorer_id}-{first or ''}-{second or ''}"


class RunIdIssuer:
    """Hands out live run ids, telling apart repeated calls that share a trace and span.

    Two watched calls inside one span would otherwise get the same id and the second result
    would overwrite the first in an upserting sink. The n-th repeat (n >= 2) of an id within the
    last `memory` ids gets the suffix `-n`. Redelivery of one run reuses the id it was issued.
    """

    def __init__(self, memory: int = 8192) -> None:
        self._memory = memory
        self._seen: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def issue(self, base: str) -> str:
        with self._lock:
            count = self._seen.pop(base, 0) + 1
            self._seen[base] = count
            if len(self._seen) > self._memory:
                self._seen.popitem(last=False)
        return base if count == 1 else f"{base}-{count}"


def request_digest(*parts: Any) -> str:
    """16 hex digits of SHA-256 over `parts` (JSON-like) as canonical JSON: equal for equal
    requests, whatever their key order, and different for any difference in them."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def request_run_id(
    scorer_id: str,
    trace_id: str | None,
    run_id: str | None,
    span_id: str | None,
    entity_id: str | None,
    digest: str,
) -> str:
    """A service's run id: `live_run_id`'s, then `-<digest>` of the whole request. Sending
    the same request again (a retry) names the same run, so it is stored once; a different
    request for the same trace and span names another run, so it never overwrites one. No
    memory is involved: replicas and restarts agree."""
    return f"{live_run_id(scorer_id, trace_id, run_id, span_id, entity_id)}-{digest}"
