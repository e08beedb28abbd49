"""Where scores go: the one record every scorer run ends as (`ScoreRecord`, about an
`AgentCall`), the `ScoreSink` protocol and the JSONL, SQLite, PostgreSQL and callback sinks.

Live scoring, `scorewatch serve`, the queue workers, experiments and scored traces all write
here; the package sits below all of them (see `layers.toml`).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..core.call import AgentCall
from .base import ScoreSink
from .callback import CallbackSink
from .jsonl import JsonlSink
from .postgres import PostgresSink
from .record import ScoreRecord, ScoreStatus
from .sqlite import SCORE_COLUMNS, SqliteSink

__all__ = [
    "SCORE_COLUMNS",
    "CallbackSink",
    "JsonlSink",
    "PostgresSink",
    "ScoreRecord",
    "ScoreSink",
    "ScoreStatus",
    "SqliteSink",
]


def __getattr__(name: str) -> Any:
    # The call a record is about was `ScoredCall` here before it became core's one call type.
    if name != "ScoredCall":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        "scorewatch.sinks.ScoredCall is now scorewatch.core.AgentCall", DeprecationWarning, 2
    )
    return AgentCall
