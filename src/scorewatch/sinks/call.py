"""`ScoredCall`: the agent call a score is about, whatever produced the score.

Live traffic, `scorewatch serve`, the queue workers, experiments and scored traces all describe
the call they scored with it; a live filter is handed one before anything runs, and every
`ScoreRecord` keeps the one it scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.result import ScorerRun, ScoreSource

__all__ = ["ScoredCall"]


@dataclass(frozen=True, slots=True)
class ScoredCall:
    """One agent call: what it was given and answered, and who and where it was.

    `target` names the agent (or workflow) being evaluated, the `entityId` of its score rows;
    `trace_id`/`span_id` locate the agent's span (hex, when known); `run_id` is the agent's own
    run or call id (generated when the caller gave none), not the scorer run's id;
    `score_source` is `trace` for a call read from exported spans (serve's `/v1/traces`,
    `score_traces`), else `live`.
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

    @classmethod
    def of_run(cls, run: ScorerRun, run_id: str) -> ScoredCall:
        """The call a scorer run was about, told by the run's own fields (the evaluated span's
        ids and metadata are the call's); `run_id` names the agent's run."""
        return cls(
            input=run.input,
            output=run.output,
            target=run.target,
            trace_id=run.target_trace_id,
            span_id=run.target_span_id,
            run_id=run_id,
            request_context=run.request_context,
            ground_truth=run.ground_truth,
            metadata=run.target_metadata,
            score_source="trace" if run.score_source == "trace" else "live",
        )
