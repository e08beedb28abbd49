"""Where live results go: the `ScoreSink` protocol and the JSONL, SQLite, PostgreSQL and callback
sinks."""

from __future__ import annotations

from .base import ScoreSink
from .callback import CallbackSink
from .jsonl import JsonlSink
from .postgres import PostgresSink
from .sqlite import SCORE_COLUMNS, SqliteSink

__all__ = [
    "SCORE_COLUMNS",
    "CallbackSink",
    "JsonlSink",
    "PostgresSink",
    "ScoreSink",
    "SqliteSink",
]
