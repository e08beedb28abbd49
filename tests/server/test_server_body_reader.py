"""The guard's body reader (`src/scorewatch/server/http/body.py`): bodies within a size and a
time limit, the time kept by one sweep instead of a timer per read. A slow body becomes
`TooSlow` within the sweep's slack, a cancellation from elsewhere stays a cancellation, and the
usual one-message body is handed on as it arrived."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


async def test_a_body_there_at_once_keeps_no_deadline() -> None:
    # The usual body (whole in the first message, which needs no wait) is read without the
    # sweep's bookkeeping: no watch registered, no sweep started.
    reader = BodyReader(1024, 5.0)
    assert await reader.read(_receiver({"type": "http.request", "body": b"{}"})) == b"{}"
    assert reader._deadlines is None
    # A first message that has to be waited for is watched as before, and its entry removed.
    arriving: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    read = asyncio.ensure_future(reader.read(arriving.get))
    await asyncio.sleep(0.01)
    assert reader._deadlines is not None and len(reader._deadlines.pending) == 1
    arriving.put_nowait({"type": "http.request", "body": b"[]"})
    assert await read == b"[]"
    assert not reader._deadlines.pending


class _OldReader:
    """`BodyReader._consume` before the unwatched first message (main at 2ee4664), without
    the deadline (the messages here never wait): the oracle of what a read gives."""

    def __init__(self, limit: int) -> None:
        self._limit = limit

    async def consume(self, receive: Any, *, keep: bool) -> bytes | None:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body: bytes = message.get("body", b"")
        size = len(body)
        if size > self._limit:
            raise TooLarge
        if not message.get("more_body", False):
            return body
        chunks = [body] if keep else []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._limit:
                raise TooLarge
            if keep:
                chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


_messages = st.lists(
    st.one_of(
        st.just({"type": "http.disconnect"}),
        st.builds(
            lambda body, more, bare: (
                {"type": "http.request"}
                if bare
                else {"type": "http.request", "body": body, "more_body": more}
            ),
            st.binary(max_size=12),
            st.booleans(),
            st.booleans(),
        ),
    ),
    min_size=1,
    max_size=5,
).map(lambda ms: [*ms, {"type": "http.disconnect"}])  # a client that ends: never waits


async def _outcome(read: Any) -> Any:
    try:
        return ("body", await read)
    except TooLarge:
        return ("too large", None)


@given(_messages, st.integers(min_value=0, max_value=30), st.booleans())
def test_a_read_gives_what_it_gave_before(
    messages: list[dict[str, Any]], limit: int, keep: bool
) -> None:
    async def both() -> tuple[Any, Any]:
        reader = BodyReader(limit, 5.0)
        new = await _outcome(
            reader.read(_receiver(*messages)) if keep else reader.discard(_receiver(*messages))
        )
        old = await _outcome(_OldReader(limit).consume(_receiver(*messages), keep=keep))
        if not keep:  # `discard` gives nothing and swallows TooLarge
            old = ("body", None)
        return new, old

    new, old = asyncio.run(both())
    assert new == old
