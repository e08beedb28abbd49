"""Storing batch-evaluation results in the sinks, so experiments and live traffic share one store
(rows with `source="TEST"`, as the reference system marks evaluation runs).

```python
writer = ExperimentSinkWriter([SqliteSink("scores.db")])
await run_experiment(data=data, scorers=[...], on_result=writer)
await writer.aclose()
```

The stored call is each outcome's own (`RunOutcome.call`), so `score_traces(..., on_result=writer)`
stores trace scores the same way, each row naming its span (`traceId`, `spanId`) and agent.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.call import AgentCall
from ..sinks.base import ScoreSink
from ..sinks.record import ScoreRecord
from .data import item_call
from .experiment import RunOutcome

__all__ = ["ExperimentSinkWriter"]

logger = logging.getLogger("scorewatch.evals.store")


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
        data: Sequence[Mapping[str, Any]] | None = None,
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

    def _item_call(self, outcome: RunOutcome) -> AgentCall:
        if outcome.call is not None:
            return outcome.call
        # An outcome made by hand, without its call: the item as the dataset holds it.
        if self.data is None:
            raise ValueError("this outcome has no call: give the writer the experiment's data")
        item = self.data[outcome.item_index]
        output = outcome.result.output if outcome.result is not None else item.get("output")
        return item_call(item, output)

    def _call(self, outcome: RunOutcome) -> AgentCall:
        """The item's call as its rows store it: run by the experiment, named by the writer."""
        call = self._item_call(outcome)
        return dataclasses.replace(
            call,
            run_id=self.experiment_id,
            target=self.target if self.target is not None else call.target,
            metadata={
                **(call.metadata or {}),
                "experimentId": self.experiment_id,
                "item": outcome.item_index,
            },
        )

    async def __call__(self, outcome: RunOutcome) -> None:
        row_id = f"experiment-{self.experiment_id}-{outcome.scorer.id}-{outcome.item_index}"
        call = self._call(outcome)
        if outcome.result is not None:
            stored = ScoreRecord.success(
                row_id, outcome.scorer, call, outcome.result, "TEST", outcome.redaction
            )
        else:
            error = outcome.error or RuntimeError("scorer run failed")
            stored = ScoreRecord.failure(
                row_id, outcome.scorer, call, error, "TEST", outcome.redaction
            )
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
