"""Storing batch-evaluation results in the live sinks, so experiments and live traffic share
one store (rows with `source="TEST"`, as the reference system marks evaluation runs).

```python
writer = ExperimentSinkWriter([SqliteSink("scores.db")], data)
await run_experiment(data=data, scorers=[...], on_result=writer)
await writer.aclose()
```
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..evals import RunOutcome
from .context import LiveCall
from .result import LiveResult
from .sinks.base import ScoreSink

__all__ = ["ExperimentSinkWriter"]

logger = logging.getLogger("scorewatch.live.experiments")


class ExperimentSinkWriter:
    """An `on_result` hook for `run_experiment` writing every finished run to the sinks.

    A failed run is stored as a failure (error, failed step, completed steps), never as a score,
    even when its snapshot holds a recovered score. A sink error is logged and counted in
    `errors` and does not stop the other sinks or the experiment. Row ids are deterministic per
    (experiment, scorer, item), so re-running with the same `experiment_id` overwrites.
    """

    def __init__(
        self,
        sinks: Sequence[ScoreSink],
        data: Sequence[Mapping[str, Any]],
        *,
        experiment_id: str | None = None,
        target: str | None = None,
    ) -> None:
        self.sinks = list(sinks)
        self.data = data
        self.experiment_id = experiment_id or uuid.uuid4().hex
        self.target = target
        self.errors: dict[str, int] = {}
        self.written = 0

    def _call(self, outcome: RunOutcome) -> LiveCall:
        item = self.data[outcome.item_index]
        output = outcome.result.output if outcome.result is not None else item.get("output")
        # Items built from traces name their span (`run_items`): its rows carry the ids.
        return LiveCall(
            input=item.get("input"),
            output=output,
            target=self.target or item.get("target"),
            trace_id=item.get("target_trace_id"),
            span_id=item.get("target_span_id"),
            run_id=self.experiment_id,
            request_context=item.get("request_context"),
            ground_truth=item.get("ground_truth"),
            metadata={"experimentId": self.experiment_id, "item": outcome.item_index},
        )

    async def __call__(self, outcome: RunOutcome) -> None:
        row_id = f"experiment-{self.experiment_id}-{outcome.scorer.id}-{outcome.item_index}"
        call = self._call(outcome)
        if outcome.result is not None:
            stored = LiveResult.success(row_id, outcome.scorer, call, outcome.result, "TEST")
        else:
            error = outcome.error or RuntimeError("scorer run failed")
            stored = LiveResult.failure(row_id, outcome.scorer, call, error, "TEST")
        for sink in self.sinks:
            try:
                await sink.write([stored])
            except Exception:
                name = str(getattr(sink, "name", type(sink).__name__))
                self.errors[name] = self.errors.get(name, 0) + 1
                logger.exception("sink %r failed to store experiment result %s", name, row_id)
        self.written += 1

    async def aclose(self) -> None:
        for sink in self.sinks:
            try:
                await sink.aclose()
            except Exception:
                logger.exception("closing sink %r failed", getattr(sink, "name", sink))
