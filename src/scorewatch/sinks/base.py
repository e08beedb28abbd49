"""The `ScoreSink` protocol: where score records go once a scorer run has finished."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, TypedDict, Unpack, runtime_checkable

from .record import ScoreRecord, ScoreStatus

__all__ = [
    "DEFAULT_QUERY_LIMIT",
    "RowsRefusedError",
    "RunQuery",
    "ScoreOrder",
    "ScoreQuery",
    "ScoreReader",
    "ScoreSink",
]

DEFAULT_QUERY_LIMIT = 100

ScoreOrder = Literal["newest", "score_asc", "score_desc"]


class RowsRefusedError(Exception):
    """A sink refused some results for reasons of their own (a value it cannot hold, a
    constraint they break), not because it is down: writing them again fails the same way.
    Every other result of the same `write` call was stored. `refused` pairs each refused
    result with the sink's error."""

    def __init__(self, refused: Sequence[tuple[ScoreRecord, BaseException]]) -> None:
        kinds = sorted({type(error).__name__ for _result, error in refused})
        super().__init__(f"{len(refused)} row(s) refused ({', '.join(kinds)})")
        self.refused = list(refused)


@runtime_checkable
class ScoreSink(Protocol):
    """A destination for score records (live, served, experiment or trace runs alike).

    `write` returns once the results are stored (durably, for a durable sink): only then does a
    result count as stored. It may be awaited from any event loop and thread, concurrently.
    It raises `RowsRefusedError` when it stored all but some results it will never take (a bad
    row is not an outage), and any other error when the sink itself failed (down, full,
    locked): then nothing of the call is known to be stored, and writing again may work.
    `name` is a short, fixed label (`sqlite`, `jsonl`, ...) used in logs and metrics.
    `aclose` flushes and releases resources; no `write` follows it.
    """

    name: str

    async def write(self, results: Sequence[ScoreRecord]) -> None: ...

    async def aclose(self) -> None: ...


class ScoreQuery(TypedDict, total=False):
    """The filters a reading sink's `query`/`aquery` take, each optional: `target` matches
    `entityId`, `scorer` matches `scorerId`, `since` is inclusive and `until` exclusive (a
    datetime or an ISO timestamp as stored), `status` keeps one status, `min_score`/`max_score`
    bound the score (inclusive), `order` is `newest` (default) or `score_asc`/`score_desc` (only
    rows with a score), `after` continues past a row's `order_key`, `limit` caps the rows
    (`DEFAULT_QUERY_LIMIT`)."""

    target: str | None
    scorer: str | None
    since: datetime | str | None
    until: datetime | str | None
    status: ScoreStatus | None
    min_score: float | None
    max_score: float | None
    order: ScoreOrder | None
    after: tuple[Any, str] | None
    limit: int


class RunQuery(ScoreQuery, total=False):
    """`ScoreQuery` plus `ids`: only the rows of these run ids (the SQL sinks take it)."""

    ids: Sequence[str] | None


class ScoreReader(Protocol):
    """A sink whose stored rows can be read back (`GET /v1/scores`)."""

    async def aquery(self, **query: Unpack[ScoreQuery]) -> list[dict[str, Any]]:
        """Stored rows (`ScoreRecord.to_row()` as stored), newest first."""
        ...
