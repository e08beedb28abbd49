"""One live run, scored and stored: what the engine, and the queue workers, do with each run.

`score_call` turns a `ScoredCall` into scorer-run fields and runs the scorer; a failing run ends as
a failed result rather than an exception. A call carrying more than `OFFLOAD_CHARS` characters
of text has its scorers' synchronous function steps run in a small process-wide pool
(`core.offload`), so model-free scoring of a megabyte of text never stalls a loop that serves
others (an agent, HTTP clients, a Redis consumer); a smaller call scores on the loop, as handing
a step to a thread costs more than scoring a few kilobytes. The pool has
`SCOREWATCH_SCORING_THREADS` threads (default 2): scorer steps are Python code holding the GIL,
so more threads would not score faster, only compete with the loop.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..core.offload import offload_function_steps
from ..core.scorer import Scorer
from ..sinks.call import ScoredCall
from ..sinks.record import ScoreRecord

__all__ = [
    "OFFLOAD_CHARS",
    "call_is_heavy",
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
    executor = scoring_executor() if call_is_heavy(call) else None
    try:
        with offload_function_steps(executor):
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
