"""`score_call`: one scorer run on one live call, its outcome as a `ScoreRecord`.

The one place that turns a `ScoredCall` into scorer-run fields: `LiveScoring`, serve's in-process
intake and the queue workers all run their scorers through it, so the three score a call alike
and a failing run ends as a failed result rather than an exception.
"""

from __future__ import annotations

from ..core.offload import offload_function_steps
from ..core.scorer import Scorer
from ..sinks.call import ScoredCall
from ..sinks.record import ScoreRecord
from .offload import call_is_heavy, scoring_executor

__all__ = ["score_call"]


async def score_call(scorer: Scorer, call: ScoredCall, run_id: str) -> ScoreRecord:
    """Run `scorer` on `call` under `run_id`; a raised `Exception` becomes a failed result.

    The synchronous function steps of a large call run in the scoring pool, off the caller's
    event loop (see `live.offload`)."""
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
