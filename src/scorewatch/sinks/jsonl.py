"""`JsonlSink`: append one JSON object per result to a file, flushed after every batch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from .batch_thread import ThreadedSink
from .record import ScoreRecord, record_json

__all__ = ["JsonlSink"]


class JsonlSink(ThreadedSink):
    """Each line is `ScoreRecord.to_row()` as JSON. A run delivered twice (after its loop died
    mid-write) appears twice with the same `id`; readers keep the last line per id.

    `fsync=True` also syncs the file after each batch (survives power loss, slower).
    """

    name = "jsonl"

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fsync = fsync
        self._file: IO[str] | None = None
        self._start_writer("jsonl-sink")

    def _encode(self, result: ScoreRecord) -> str:
        return record_json(result) + "\n"

    def _refuses(self, error: Exception) -> bool:
        return not isinstance(error, OSError | MemoryError)

    def _store(self, rows: list[str]) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write("".join(rows))
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())

    def _release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
