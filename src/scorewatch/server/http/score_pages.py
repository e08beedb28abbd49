"""`GET /v1/scores` pages: read in small chunks, streamed, bounded in bytes, continued by cursor.

A page holds at most `limit` rows and at most `PAGE_BYTES` of JSON (always at least one row, so
every row can be read); when more rows may follow, `next` is an opaque cursor that continues
right after the last row sent (keyset pagination: pages neither skip nor repeat rows written
meanwhile). Rows are fetched a chunk at a time and written out as they come; a chunk holds up
to `_CHUNK_ROWS` rows but about `_CHUNK_BYTES` at most (the size of the rows read so far sets
how many the next fetch asks for, at least one), and the row read ahead to know whether more
follow is kept for the next chunk, not read twice. So a reader holds about a megabyte of rows
(or one row, when a row is larger), not a page's worth several times over. The first chunk is
read before the answer starts: a store that cannot be read is a 503, never a half-sent 200.

`ReaderSlots` bounds how many pages are read at once (`server.max_readers`); a reader beyond
them is answered 429 `too_many_readers` at once.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, Final, get_args

from ...sinks.base import ScoreOrder, ScoreQuery, ScoreReader
from ...sinks.sql import order_key
from ...sinks.storable import storable, storable_text

__all__ = [
    "PAGE_BYTES",
    "BadCursorError",
    "ReaderSlots",
    "ScorePage",
    "decode_cursor",
    "encode_cursor",
]

logger = logging.getLogger("scorewatch.server")

PAGE_BYTES: Final = 8 << 20
_CHUNK_ROWS: Final = 16
_CHUNK_BYTES: Final = 1 << 20
_FIRST_ROWS: Final = 2  # before any row's size is known


class ReaderSlots:
    """How many pages are being read at once, at most `limit` (one event loop's count)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    def take(self) -> bool:
        if self.taken >= self.limit:
            return False
        self.taken += 1
        return True

    def give_back(self) -> None:
        self.taken -= 1


class BadCursorError(ValueError):
    """A `cursor` this service did not issue, or issued for another order."""


def encode_cursor(order: ScoreOrder, key: tuple[Any, str]) -> str:
    # allow_nan: a NaN score some other tool stored still gets a cursor past it.
    text = json.dumps({"o": order, "k": list(key)}, separators=(",", ":"), allow_nan=True)
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(token: str, order: ScoreOrder) -> tuple[Any, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        document = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        value, row_id = document["k"]
        issued_for = document["o"]
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error):
        raise BadCursorError("not a cursor this endpoint issued") from None
    if issued_for != order:
        raise BadCursorError(f"issued for order={issued_for}, not order={order}")
    # What a store can be asked: a tampered cursor is a 422 here, not a store error later.
    key = _timestamp(value) if order == "newest" else _score(value)
    if key is None or not isinstance(row_id, str) or storable_text(row_id) != row_id:
        raise BadCursorError("not a cursor this endpoint issued")
    return key, row_id


def _timestamp(value: object) -> str | None:
    """`value` when it is an ISO 8601 time (as `newest` cursors hold), else None."""
    if not isinstance(value, str) or storable_text(value) != value:
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return None
    return value


def _score(value: object) -> float | None:
    """`value` as the float a score column compares with (NaN included: a NaN score some
    other tool stored gets a cursor too), else None."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer no float holds
        return None


def row_json(row: dict[str, Any]) -> bytes:
    """One stored row as JSON: whatever a store returns (NaN, unpaired surrogates, NUL written
    by another tool) becomes text every client can parse, never an error."""
    return json.dumps(storable(row), ensure_ascii=False, allow_nan=False, default=str).encode()


class ScorePage:
    """One page of `GET /v1/scores`: `await start()` (raises what the store raises), then
    stream `body()`."""

    def __init__(
        self, reader: ScoreReader, limit: int, query: ScoreQuery, budget: int = PAGE_BYTES
    ) -> None:
        self._reader = reader
        self._limit = limit
        self._budget = budget
        self._query = query
        self._order: ScoreOrder = query.get("order") or "newest"
        assert self._order in get_args(ScoreOrder)
        self._ahead: list[dict[str, Any]] = []  # fetched, not sent yet
        self._fetched_to: tuple[Any, str] | None = query.get("after")
        self._exhausted = False

    async def _fetch(self, rows: int) -> None:
        """Ask for `rows` more rows and one to tell whether more follow; keep them ahead."""
        query = self._query.copy()
        query["after"] = self._fetched_to
        query["limit"] = rows + 1
        fetched = await self._reader.aquery(**query)
        self._exhausted = len(fetched) <= rows
        if fetched:
            self._fetched_to = order_key(fetched[-1], self._order)
        self._ahead.extend(fetched)

    async def start(self) -> None:
        await self._fetch(min(_FIRST_ROWS, self._limit))

    async def body(self) -> AsyncIterator[bytes]:
        yield b'{"scores":['
        count = size = 0
        last: tuple[Any, str] | None = None  # the sort key of the last row sent
        row_bytes = 0.0  # the average encoded row so far
        more = False
        try:
            while count < self._limit:
                wanted = min(self._limit - count, _chunk_rows(row_bytes))
                if len(self._ahead) < wanted and not self._exhausted:
                    await self._fetch(wanted - len(self._ahead))
                chunk, self._ahead = self._ahead[:wanted], self._ahead[wanted:]
                if not chunk:
                    break
                # Megabyte rows take milliseconds each to encode: not on the serving loop.
                encoded_rows = await asyncio.to_thread(_encode_rows, chunk)
                keys = [order_key(row, self._order) for row in chunk]
                del chunk
                row_bytes = _average(row_bytes, count, encoded_rows)
                for key, encoded in zip(keys, encoded_rows, strict=True):
                    if count and size + len(encoded) > self._budget:
                        more = True
                        break
                    if count:
                        yield b","
                    yield encoded
                    count += 1
                    size += len(encoded) + 1
                    last = key
                del encoded_rows
                if more:
                    break
            else:
                more = bool(self._ahead) or not self._exhausted
        except Exception as error:
            # The answer has started: all that is left is to end it early (the client sees a
            # truncated body, not a page that looks complete).
            logger.error("reading the result store failed mid-page (%s)", type(error).__name__)
            raise
        self._ahead = []
        cursor = None
        if more and last is not None:
            cursor = encode_cursor(self._order, _cursor_key(last))
        tail = {"count": count, "next": cursor}
        yield b"]," + json.dumps(tail)[1:].encode()


def _chunk_rows(row_bytes: float) -> int:
    """How many rows the next chunk holds: `_CHUNK_BYTES` worth at the average so far."""
    if row_bytes <= 0:
        return _FIRST_ROWS
    return max(1, min(_CHUNK_ROWS, int(_CHUNK_BYTES // row_bytes)))


def _average(previous: float, counted: int, encoded: list[bytes]) -> float:
    if not encoded:
        return previous
    total = previous * counted + sum(len(each) for each in encoded)
    return total / (counted + len(encoded))


def _encode_rows(rows: list[dict[str, Any]]) -> list[bytes]:
    return [row_json(row) for row in rows]


def _cursor_key(key: tuple[Any, str]) -> tuple[Any, str]:
    value, row_id = key
    return (value if isinstance(value, str | int | float) else str(value)), row_id
