"""A progress line for long runs: redrawn in place on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        interval: float = 2.0,
        unit: str = "items",
    ):
        self.total = total
        self.unit = unit
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval
        self.started = time.monotonic()
        self.done = 0
        self.failures = 0
        self._last_print = 0.0

    def advance(self, *, failures: int = 0) -> None:
        self.done += 1
        self.failures += failures
        now = time.monotonic()
        if self.tty or now - self._last_print >= self.interval or self.done == self.total:
            self._last_print = now
            self._draw(now)

    def _line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        remaining = (self.total - self.done) / rate if rate > 0 else 0.0
        percent = 100 * self.done / self.total if self.total else 100.0
        return (
            f"{self.done}/{self.total} {self.unit} ({percent:.0f}%)  {rate:.1f} {self.unit}/s  "
            f"ETA {remaining:.0f}s  failures {self.failures}"
        )

    def _draw(self, now: float) -> None:
        line = self._line(now)
        if self.tty:
            width = 30
            filled = int(width * self.done / self.total) if self.total else width
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {line}\x1b[K")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty and self.done != self.total:
            self.stream.write("\n")
            self.stream.flush()
