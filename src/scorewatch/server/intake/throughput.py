"""What the service can finish, estimated: the basis of admission by queue delay.

With `c` runs at once each taking `d` seconds on average, the service finishes `c / d` runs per
second (Little's law) whatever the traffic is now, so a quiet service is not mistaken for a slow
one. `d` is a moving average of measured run durations; for runs that compete for the CPU it
grows with the contention, so the estimate follows the real capacity either way. Admission
turns it into how much work may wait (`rate x live.max_queue_delay`) and into the `Retry-After`
of a 429 (how long until the queue has drained enough for the request to fit).
"""

from __future__ import annotations

import math
import threading
import time

__all__ = ["Pace", "Throughput"]


class Throughput:
    """Runs per second the service finishes: `concurrency / average run duration`, None until
    `minimum` runs have been timed."""

    def __init__(self, concurrency: int, *, minimum: int = 20, weight: float = 0.05) -> None:
        self._concurrency = concurrency
        self._minimum = minimum
        self._weight = weight
        self._average = 0.0
        self._timed = 0
        self._lock = threading.Lock()
        # Worked out when a run is timed (once per run, on the scoring loop) rather than when it
        # is read (up to three times per request, on the loop that reads them): one attribute,
        # so a read needs no lock.
        self._rate: float | None = None

    def finished(self, *durations: float) -> None:
        """Time finished runs, in the order they finished (those of a batch: one lock)."""
        with self._lock:
            weight = self._weight
            for duration in durations:
                self._timed += 1
                if self._timed == 1:
                    self._average = duration
                else:
                    self._average += weight * (duration - self._average)
            if self._timed >= self._minimum:
                self._rate = self._concurrency / max(self._average, 1e-4)

    def rate(self) -> float | None:
        return self._rate

    @staticmethod
    def seconds_for(runs: float, rate: float) -> int:
        """Whole seconds (at least 1) to finish `runs` at `rate` runs per second."""
        return max(1, math.ceil(runs / rate))


class Pace:
    """Admission at the rate the service finishes runs: a budget of runs, refilled at
    `Throughput.rate()` per second up to `burst` seconds' worth, spent by every admitted run.

    For when the loop reading requests is behind: refusing everything then would stop the
    accepted work too (congestion collapse, issue 28 item 10), while what the service can
    finish is known; it keeps admitting about that much and refuses the rest unread."""

    def __init__(self, throughput: Throughput, *, burst: float = 1.0) -> None:
        self._throughput = throughput
        self._burst = burst
        self._budget = 0.0
        self._at = time.monotonic()

    def allows(self) -> bool:
        """Whether a run may be admitted now; never before the rate is known."""
        rate = self._throughput.rate()
        now = time.monotonic()
        elapsed, self._at = now - self._at, now
        if rate is None:
            return False
        self._budget = min(self._cap(rate), self._budget + rate * elapsed)
        return self._budget >= 1.0

    def spend(self, runs: int) -> None:
        """Count admitted runs (the budget owes at most `burst` seconds' worth)."""
        rate = self._throughput.rate()
        if rate is not None:
            self._budget = max(-self._cap(rate), self._budget - runs)

    def _cap(self, rate: float) -> float:
        return max(1.0, rate * self._burst)
