"""Log lines that repeat at most once per interval (a minute) per key, with the count of those
held back.

A judge outage fails every live run; one log line per run would bury everything else.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

__all__ = ["ThrottledLog"]


class ThrottledLog:
    def __init__(self, logger: logging.Logger, interval_s: float = 60.0) -> None:
        self._logger = logger
        self._interval = interval_s
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def warning(self, key: str, message: str, *args: Any, exc_info: bool = False) -> None:
        self.log(logging.WARNING, key, message, *args, exc_info=exc_info)

    def error(self, key: str, message: str, *args: Any, exc_info: bool = False) -> None:
        self.log(logging.ERROR, key, message, *args, exc_info=exc_info)

    def log(self, level: int, key: str, message: str, *args: Any, exc_info: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._interval:
                self._held[key] = self._held.get(key, 0) + 1
                return
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            message += " (%d more like this since the last report)"
            args = (*args, held)
        self._logger.log(level, message, *args, exc_info=exc_info)
