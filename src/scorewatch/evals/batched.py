"""Batch-priced scoring: run any scoring (an experiment, a trace replay, a re-scoring of stored
runs) with its judge calls sent through OpenAI's Batch API, at the batch price.

`score_items_batched(run, state_path=...)` awaits `run()` with every judge call of the scorer
runs it starts answered by a `BatchingJudge` (judge/batching.py). Nothing else changes: the
same scorers build the same prompts, parse and validate the same answers and write the same
judge records (their transport `openai_batch`, their cost at the batch price), so the results
have the shape of a direct run's. `run()` should start every item at once (no concurrency
bound): the items that are in flight together are what one round batches.

The state file makes the run resumable: started again after a kill with the same inputs and
the same `state_path`, it polls or downloads the batches the killed run submitted instead of
submitting their requests again. It is removed once `run()` returns; an interrupted run keeps it.
The verdict cache is off in a batch-priced run (a stand-in answers the judge requests).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..core.judge_standin import judging_with
from ..judge.batching import BatchingJudge

__all__ = ["BatchSettings", "score_items_batched"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """Where a batch-priced run keeps its state, and how it waits for batches.

    `poll_interval`: seconds between status polls of a submitted batch (OpenAI finishes most
    batches in minutes to hours; 30 s is polite). `linger`: seconds without a new judge request
    after which the queued ones are sent as a round."""

    state_path: Path
    poll_interval: float = 30.0
    linger: float = 0.5


async def score_items_batched(
    run: Callable[[], Awaitable[T]],
    settings: BatchSettings,
    *,
    report: Callable[[str], None] | None = None,
) -> T:
    """`run()`'s result, its judge calls answered through the Batch API (see the module)."""
    batching = BatchingJudge(
        settings.state_path,
        poll_interval=settings.poll_interval,
        linger=settings.linger,
        report=report,
    )
    async with batching:
        with judging_with(batching):
            result = await run()
    if report is not None:
        report(
            f"batch: {batching.rounds} round(s); {batching.submitted} request(s) submitted, "
            f"{batching.resumed} answered by batches of an earlier run"
        )
    settings.state_path.unlink(missing_ok=True)
    return result
