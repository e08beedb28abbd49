"""`LoopShare`: keeps in-process scoring from starving the HTTP answers on the same event loop.

asyncio runs every callback that is ready at the start of a loop iteration before it looks at
the sockets again. With dozens of scorer runs ready at once, one iteration can hold a hundred
milliseconds of scoring, and every HTTP answer waits that long per step it takes. A run that
enters through `turn()` starts only while the scoring of the current iteration has used less
than `budget` seconds; the others wait for a later iteration, after the loop has polled the
sockets, so an iteration holds at most about `budget` of scoring plus the HTTP work.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["LoopShare"]


class LoopShare:
    """Per event loop iteration, at most about `budget` seconds of run starts (one loop only)."""

    def __init__(self, budget: float) -> None:
        self._budget = budget
        self._slice_start: float | None = None
        self._next: asyncio.Future[None] | None = None

    async def turn(self) -> None:
        while True:
            now = time.perf_counter()
            if self._slice_start is None:
                # The first start of an iteration opens a slice; it ends with this iteration
                # (a callback scheduled now runs at the start of the next one).
                self._slice_start = now
                asyncio.get_running_loop().call_soon(self._end_slice)
                return
            if now - self._slice_start < self._budget:
                return
            if self._next is None:
                self._next = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._next)

    def _end_slice(self) -> None:
        self._slice_start = None
        waiting, self._next = self._next, None
        if waiting is not None and not waiting.done():
            # The waiters resume an iteration later still: after the sockets were polled.
            waiting.set_result(None)
