"""Where scores go: the one record every scorer run ends as (`ScoreRecord`, about a
`ScoredCall`), the `ScoreSink` protocol and the JSONL, SQLite, PostgreSQL and callback sinks.

Live scoring, `scorewatch serve`, the queue workers, experiments and scored traces all write
here; the package sits below all of them (see `layers.toml`).
"""

from __future__ import annotations

from .base import ScoreSink
from .call import ScoredCall
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
    "ScoredCall",
    "SqliteSink",
]
