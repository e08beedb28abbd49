"""The `ScoreSink` protocol: where live results go once a scorer run has finished."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..result import LiveResult

__all__ = ["ScoreSink"]


@runtime_checkable
class ScoreSink(Protocol):
    """A destination for live results.

    `write` returns once the results are stored (durably, for a durable sink): only then does a
    result count as stored. It may be awaited from any event loop and thread, concurrently.
    `name` is a short, fixed label (`sqlite`, `jsonl`, ...) used in logs and metrics.
    `aclose` flushes and releases resources; no `write` follows it.
    """

    name: str

    async def write(self, results: Sequence[LiveResult]) -> None: ...

    async def aclose(self) -> None: ...
