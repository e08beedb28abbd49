"""One live run: its deterministic id, and scoring it: what the engine, serve and the queue workers
do with each run.

`score_call` turns a `ScoredCall` into scorer-run fields and runs the scorer; a failing run ends as
a failed result rather than an exception. A call carrying more than `OFFLOAD_CHARS` characters
of text has its scorers' synchronous function steps run in a small process-wide pool
(`core.offload`), so model-free scoring of a megabyte of text never stalls a loop that serves
others (an agent, HTTP clients, a Redis consumer); a smaller call scores on the loop, as handing
a step to a thread costs more than scoring a few kilobytes. The pool has
`SCOREWATCH_SCORING_THREADS` threads (default 2): scorer steps are Python code holding the GIL,
so more threads would not score faster, only compete with the loop.

Run ids are deterministic, one per (scorer, trace or run, span), so the same call scored again
overwrites its row instead of adding one: `live_run_id` for watched calls (with `RunIdIssuer`
telling apart repeated calls in one span), `request_run_id` for serve's requests, derived from a
digest of the request so a client's retry lands on the same rows.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any
from uuid import uuid4

from ..core.offload import offload_function_steps
from ..core.scorer import Scorer
from ..sinks.call import ScoredCall
from ..sinks.record import ScoreRecord

__all__ = [
    "OFFLOAD_CHARS",
    "RunIdIssuer",
    "call_is_heavy",
    "live_run_id",
    "request_digest",
    "request_run_id",
    "score_call",
    "scoring_executor",
    "warm_up_judges",
]

logger = logging.getLogger("scorewatch.live")

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


async def score_call(scorer: Scorer, call: ScoredCall, run_id: str) -> ScoreRecord:
    """Run `scorer` on `call` under `run_id`; a raised `Exception` becomes a failed result."""
    # A small call leaves the step executor as the context has it (none, unless the caller
    # installed one), instead of paying a context manager per call to set it to None.
    heavy = call_is_heavy(call)
    try:
        with offload_function_steps(scoring_executor()) if heavy else nullcontext():
            result = await scorer.run(
                input=call.input,
                output=call.output,
                run_id=run_id,
                ground_truth=call.ground_truth,
                request_context=call.request_context,
                score_source=call.score_source,
                target=call.target,
                target_trace_id=call.trace_id,
                target_span_id=call.span_id,
                target_metadata=call.metadata,
            )
    except Exception as error:
        return ScoreRecord.failure(run_id, scorer, call, error)
    return ScoreRecord.success(run_id, scorer, call, result)


def warm_up_judges(scorers: Iterable[Scorer]) -> concurrent.futures.Future[None] | None:
    """Warm litellm up in a thread when a scorer is judged by a litellm model id, so that the
    first judged run does not import it on the agent's event loop."""
    if "litellm" in sys.modules or not any(
        scorer.judge is not None and isinstance(scorer.judge.model, str) for scorer in scorers
    ):
        return None
    from ..judge.litellm_judge import warm_up_litellm

    done: concurrent.futures.Future[None] = concurrent.futures.Future()

    def warm() -> None:
        try:
            warm_up_litellm()
        finally:
            done.set_result(None)

    threading.Thread(target=warm, name="scorewatch-litellm-warm-up", daemon=True).start()
    return done


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
