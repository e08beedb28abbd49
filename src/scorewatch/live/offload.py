"""Where live scoring runs CPU-heavy scorer steps: a small process-wide thread pool.

Live scoring, serve and the workers run scorers on an event loop that serves others (an agent,
HTTP clients, a Redis consumer). A call carrying more than `OFFLOAD_CHARS` characters of text
has its scorers' synchronous function steps run in this pool instead (`core.offload`), so
model-free scoring of a megabyte of text never stalls that loop. Smaller calls score on the
loop: handing a step to a thread costs more than scoring a few kilobytes.

The pool has `SCOREWATCH_SCORING_THREADS` threads (default 2): scorer steps are Python code
holding the GIL, so more threads would not score faster, only compete with the loop. What runs
at once is also bounded by the live queue's `max_concurrency`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..sinks.call import ScoredCall

__all__ = ["OFFLOAD_CHARS", "call_is_heavy", "scoring_executor"]

# About 3 ms of the heaviest model-free scorer on the loop, and about 50 times what handing a
# step to a thread costs.
OFFLOAD_CHARS = 4096

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def scoring_executor() -> ThreadPoolExecutor:
    """The process-wide pool for CPU-heavy scorer steps (created on first use)."""
    global _executor
    with _lock:
        if _executor is None:
            threads = max(1, int(os.environ.get("SCOREWATCH_SCORING_THREADS", "2") or 2))
            _executor = ThreadPoolExecutor(threads, thread_name_prefix="scorewatch-scoring")
        return _executor


def call_is_heavy(call: ScoredCall, limit: int = OFFLOAD_CHARS) -> bool:
    """Whether the texts a scorer reads (input, output, ground truth) hold more than `limit`
    characters. Stops counting once over the limit, so a huge call costs no more than a
    small one."""
    budget = limit
    pending: list[Any] = [call.input, call.output, call.ground_truth]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            budget -= len(value)
        elif isinstance(value, Mapping):
            pending.extend(value.values())
            budget -= len(value)
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            pending.extend(value)
            budget -= len(value)
        else:
            budget -= 8
        if budget < 0:
            return True
    return False
