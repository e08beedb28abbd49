"""`GET /v1/scores` pages: read in small chunks, streamed, bounded in bytes, continued by cursor.

A page holds at most `limit` rows and at most `PAGE_BYTES` of JSON (always at least one row, so
every row can be read); when more rows may follow, `next` is an opaque cursor that continues
right after the last row sent (keyset pagination: pages neither skip nor repeat rows written
meanwhile). Rows are fetched `_CHUNK_ROWS` at a time and written out as they come, so memory
holds one chunk, not a page. The first chunk is read before the answer starts: a store that
cannot be read is a 503, never a half-sent 200.
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

__all__ = ["PAGE_BYTES", "BadCursorError", "ScorePage", "decode_cursor", "encode_cursor"]

logger = logging.getLogger("scorewatch.server")

PAGE_BYTES: Final = 8 << 20
_CHUNK_ROWS: Final = 16


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
        self._first: list[dict[str, Any]] = []

    async def _chunk(self, after: tuple[Any, str] | None, wanted: int) -> list[dict[str, Any]]:
        query = self._query.copy()
        query["after"] = after
        query["limit"] = wanted + 1
        return await self._reader.aquery(**query)

    async def start(self) -> None:
        wanted = min(_CHUNK_ROWS, self._limit)
        self._first = await self._chunk(self._query.get("after"), wanted)

    async def body(self) -> AsyncIterator[bytes]:
        yield b'{"scores":['
        count = size = 0
        last: dict[str, Any] | None = None
        more = False
        chunk = self._first
        self._first = []
        try:
            while True:
                wanted = min(_CHUNK_ROWS, self._limit - count)
                more = len(chunk) > wanted
                stop = False
                rows = chunk[:wanted]
                # Megabyte rows take milliseconds each to encode: not on the serving loop.
                encoded_rows = await asyncio.to_thread(_encode_rows, rows)
                for row, encoded in zip(rows, encoded_rows, strict=True):
                    if count and size + len(encoded) > self._budget:
                        more = stop = True
                        break
                    yield (b"," if count else b"") + encoded
                    count += 1
                    size += len(encoded) + 1
                    last = row
                if stop or not more or count >= self._limit:
                    break
                assert last is not None
                chunk = await self._chunk(
                    order_key(last, self._order), min(_CHUNK_ROWS, self._limit - count)
                )
        except Exception as error:
            # The answer has started: all that is left is to end it early (the client sees a
            # truncated body, not a page that looks complete).
            logger.error("reading the result store failed mid-page (%s)", type(error).__name__)
            raise
        cursor = None
        if more and last is not None:
            cursor = encode_cursor(self._order, _cursor_key(order_key(last, self._order)))
        tail = {"count": count, "next": cursor}
        yield b"]," + json.dumps(tail)[1:].encode()


def _encode_rows(rows: list[dict[str, Any]]) -> list[bytes]:
    return [row_json(row) for row in rows]


def _cursor_key(key: tuple[Any, str]) -> tuple[Any, str]:
    value, row_id = key
    return (value if isinstance(value, str | int | float) else str(value)), row_id
