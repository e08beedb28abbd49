"""The guard's body reader (`src/scorewatch/server/http/body.py`): bodies within a size and a
time limit, the time kept by one sweep instead of a timer per read. A slow body becomes
`TooSlow` within the sweep's slack, a cancellation from elsewhere stays a cancellation, and the
usual one-message body is handed on as it arrived."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from scorewatch.server.http.body import BodyReader, TooLarge, TooSlow

pytestmark = pytest.mark.unit


def _receiver(*messages: dict[str, Any]) -> Any:
    """An ASGI `receive` giving `messages`, then waiting forever (a client that went quiet)."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for message in messages:
        queue.put_nowait(message)
    return queue.get


async def test_a_one_message_body_is_handed_on_as_it_arrived() -> None:
    body = b'{"input": "q"}' * 10
    reader = BodyReader(1024, 5.0)
    read = await reader.read(_receiver({"type": "http.request", "body": body}))
    assert read is body


async def test_chunks_are_joined_and_the_limit_counts_them_all() -> None:
    reader = BodyReader(10, 5.0)
    chunks = ({"type": "http.request", "body": b"12345", "more_body": True},)
    last = {"type": "http.request", "body": b"678", "more_body": False}
    assert await reader.read(_receiver(*chunks, last)) == b"12345678"
    over = {"type": "http.request", "body": b"678901", "more_body": False}
    with pytest.raises(TooLarge):
        await reader.read(_receiver(*chunks, over))
    assert await reader.read(_receiver({"type": "http.disconnect"})) is None


async def test_a_body_that_stops_arriving_is_too_slow_within_the_sweeps_slack() -> None:
    timeout = 0.4
    reader = BodyReader(1024, timeout)
    started = time.monotonic()
    with pytest.raises(TooSlow):
        await reader.read(_receiver({"type": "http.request", "body": b"{", "more_body": True}))
    took = time.monotonic() - started
    # Cut off between the timeout and one sweep period (timeout / 8) after it.
    assert timeout <= took < timeout * 1.125 + 0.2, took
    # The task that read it is not left cancelled: it goes on to answer.
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)


async def test_discard_reads_a_slow_body_without_raising() -> None:
    reader = BodyReader(1024, 0.2)
    await reader.discard(_receiver({"type": "http.request", "body": b"x", "more_body": True}))
    await reader.discard(_receiver({"type": "http.request", "body": b"x" * 2000}))


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    reader = BodyReader(1024, 0.2)
    task = asyncio.ensure_future(reader.read(_receiver()))
    await asyncio.sleep(0.05)
    task.cancel()  # e.g. the server shutting down, well before the body's deadline
    with pytest.raises(asyncio.CancelledError):
        await task
    # The same reader's sweep still cuts off a read of another task.
    slow = asyncio.ensure_future(reader.read(_receiver()))
    await asyncio.sleep(0.3)  # past the deadline
    assert slow.done()
    assert isinstance(slow.exception(), TooSlow)


async def test_reads_under_way_together_each_keep_their_own_deadline() -> None:
    reader = BodyReader(1024, 0.3)
    quiet = asyncio.ensure_future(reader.read(_receiver()))
    await asyncio.sleep(0.2)
    arriving: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    late = asyncio.ensure_future(reader.read(arriving.get))
    await asyncio.sleep(0.2)  # past the first read's deadline, within the second's
    assert quiet.done() and isinstance(quiet.exception(), TooSlow)
    assert not late.done()
    arriving.put_nowait({"type": "http.request", "body": b"{}"})
    assert await late == b"{}"
