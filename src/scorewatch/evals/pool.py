"""Bounded concurrency over dataset items, failing fast when asked to."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

__all__ = ["for_each_bounded"]

T = TypeVar("T")


async def for_each_bounded(
    items: Sequence[T], concurrency: int, work: Callable[[T], Awaitable[None]]
) -> None:
    """Run `work` on every item, at most `concurrency` at a time, in item order.

    The first exception cancels the work still running and is re-raised as itself (not wrapped in
    an exception group), so callers see the error they raised.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    pending = iter(items)
    failure: list[BaseException] = []

    async def worker() -> None:
        for item in pending:
            if failure:
                return
            try:
                await work(item)
            except Exception as error:
                failure.append(error)
                raise

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(items)))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if failure:
            raise failure[0] from failure[0].__cause__
        raise
