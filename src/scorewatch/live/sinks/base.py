"""The `ScoreSink` protocol: where live results go once a scorer run has finished."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypedDict, Unpack, runtime_checkable

from .. import observers
from ..result import LiveResult, LiveStatus

__all__ = ["DEFAULT_QUERY_LIMIT", "ScoreQuery", "ScoreReader", "ScoreSink", "write_to_sinks"]

DEFAULT_QUERY_LIMIT = 100


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


async def write_to_sinks(
    sinks: Iterable[ScoreSink],
    result: LiveResult,
    on_error: Callable[[str, Exception], None],
) -> bool:
    """Write `result` to every sink in turn; True when all of them stored it. A failing sink is
    counted in telemetry (`record_sink_error`) and reported to `on_error(sink name, error)`
    (from inside the `except`, so a log call there may pass `exc_info=True`); the next sink
    still gets the result."""
    stored = True
    for sink in sinks:
        try:
            await sink.write([result])
        except Exception as error:
            stored = False
            name = str(getattr(sink, "name", type(sink).__name__))
            observers.record_sink_error(name)
            on_error(name, error)
    return stored


class ScoreQuery(TypedDict, total=False):
    """The filters a reading sink's `query`/`aquery` take, each optional: `target` matches
    `entityId`, `scorer` matches `scorerId`, `since` is inclusive (a datetime or an ISO timestamp
    as stored), `status` keeps one status, `limit` caps the rows (`DEFAULT_QUERY_LIMIT`)."""

    target: str | None
    scorer: str | None
    since: datetime | str | None
    status: LiveStatus | None
    limit: int


class ScoreReader(Protocol):
    """A sink whose stored rows can be read back (`GET /v1/scores`)."""

    async def aquery(self, **query: Unpack[ScoreQuery]) -> list[dict[str, Any]]:
        """Stored rows (`LiveResult.to_row()` as stored), newest first."""
        ...
