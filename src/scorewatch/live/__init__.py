"""Live scoring: attach scorers to running agents, sample their traffic, score it in the
background, and store the results (docs/reference-semantics.md, "Live scoring").

```python
from scorewatch.live import LiveScorerEntry, LiveScoring, Sampling, SqliteSink

live = LiveScoring(
    scorers={"summary": LiveScorerEntry(scorer, sampling=Sampling.ratio(0.1))},
    max_concurrency=32, max_queue=10_000, sinks=[SqliteSink("scores.db")],
)

@live.watch(target="support-bot")
async def answer(question: str) -> str: ...
```

The sinks and the record they store (`ScoreRecord`) belong to `scorewatch.sinks`, shared with
batch evaluation, and the call a filter is handed (`AgentCall`) to `scorewatch.core`; they are
re-exported here for live users.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..core.call import AgentCall
from ..sinks import CallbackSink, JsonlSink, PostgresSink, ScoreSink, SqliteSink
from ..sinks.record import ScoreRecord
from .entry import LiveFilter, LiveScorerEntry, Sampling
from .scoring import LiveDecision, LiveScoring, LiveStats

__all__ = [
    "AgentCall",
    "CallbackSink",
    "JsonlSink",
    "LiveDecision",
    "LiveFilter",
    "LiveScorerEntry",
    "LiveScoring",
    "LiveStats",
    "PostgresSink",
    "Sampling",
    "ScoreRecord",
    "ScoreSink",
    "SqliteSink",
]

# Names this package exported before the score record became source-neutral (issue 18): they
# still resolve, with a warning naming the one name to use now.
_RENAMED = {
    "ScorerEntry": ("scorewatch.live.LiveScorerEntry", "LiveScorerEntry"),
    "LiveResult": ("scorewatch.sinks.ScoreRecord", "ScoreRecord"),
    "LiveCall": ("scorewatch.core.AgentCall", "AgentCall"),
}


def __getattr__(name: str) -> Any:
    if name not in _RENAMED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new_path, local = _RENAMED[name]
    warnings.warn(f"scorewatch.live.{name} is now {new_path}", DeprecationWarning, stacklevel=2)
    return globals()[local]
