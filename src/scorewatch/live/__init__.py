"""Live scoring: attach scorers to running agents, sample their traffic, score it in the
background, and store the results (spec §8).

```python
from scorewatch.live import LiveScoring, ScorerEntry, Sampling, SqliteSink

live = LiveScoring(
    scorers={"summary": ScorerEntry(scorer, sampling=Sampling.ratio(0.1))},
    max_concurrency=32, max_queue=10_000, sinks=[SqliteSink("scores.db")],
)

@live.watch(target="support-bot")
async def answer(question: str) -> str: ...
```
"""

from __future__ import annotations

from .context import LiveCall
from .entry import LiveFilter, ScorerEntry
from .experiments import ExperimentSinkWriter
from .result import LiveResult
from .sampling import Sampling
from .scoring import LiveDecision, LiveScoring, LiveStats
from .sinks import CallbackSink, JsonlSink, PostgresSink, ScoreSink, SqliteSink

__all__ = [
    "CallbackSink",
    "ExperimentSinkWriter",
    "JsonlSink",
    "LiveCall",
    "LiveDecision",
    "LiveFilter",
    "LiveResult",
    "LiveScoring",
    "LiveStats",
    "PostgresSink",
    "Sampling",
    "ScoreSink",
    "ScorerEntry",
    "SqliteSink",
]
