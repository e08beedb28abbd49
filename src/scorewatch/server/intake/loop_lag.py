"""`LoopLag`: how far behind the loop that admits requests runs.

With scoring on a thread of its own, the queue can keep up while the HTTP loop does not: it
competes with scoring for the GIL and the CPU, and past its capacity requests wait in its sockets
unseen by any queue, each answered later than the one before. A timer on that loop, due every
`interval` seconds, shows it: how late it fires is how long a request's next step waits. The
average lateness over about `window` seconds (a time-weighted moving average: a loop falling
behind for good moves it within about a second, one stall of a busy machine, a few hundred ms,
moves it little) is what admission compares with its limit.
"""

from __future__ import annotations

import asyncio
import math

__all__ = ["LoopLag"]


class LoopLag:
    """The lateness of a timer on one event loop, averaged over about `window` seconds."""

    def __init__(self, interval: float = 0.01, window: float = 1.0) -> None:
        self._interval = interval
        self._window = window
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._last = 0.0
        self._average = 0.0

    def watch(self) -> None:
        """Start timing the running loop (once; later calls do nothing)."""
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._last = self._loop.time()
        self._schedule(self._last)

    def seconds(self) -> float:
        """The average lateness; 0 before `watch`."""
        return self._average

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self, now: float) -> None:
        assert self._loop is not None
        self._due = now + self._interval
        self._handle = self._loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        late = max(0.0, now - self._due)
        # Weighted by the time it covers: a tick late by seconds counts for those seconds.
        weight = 1.0 - math.exp(-(now - self._last) / self._window)
        self._average += weight * (late - self._average)
        self._last = now
        self._schedule(now)
