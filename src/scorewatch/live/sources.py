"""`PulledSources`: readings that telemetry pulls at collection time instead of being pushed.

A queue registers a zero-argument source (its depth, its latest stream reading) and keeps the
function that unregisters it; a gauge callback reads every registered source when it is
collected. A source that raises is logged and skipped, so one broken queue never hides the others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PulledSources"]

T = TypeVar("T")


class PulledSources(Generic[T]):
    def __init__(self, what: str, logger: logging.Logger) -> None:
        self._what = what
        self._logger = logger
        self._sources: dict[int, Callable[[], T]] = {}
        self._lock = threading.Lock()

    def register(self, source: Callable[[], T]) -> Callable[[], None]:
        """Read `source()` from now on; returns the function that unregisters it."""
        key = id(source)
        with self._lock:
            self._sources[key] = source

        def unregister() -> None:
            with self._lock:
                if self._sources.get(key) is source:
                    del self._sources[key]

        return unregister

    def read(self) -> list[T]:
        """Every registered source's current value, in registration order."""
        with self._lock:
            sources = list(self._sources.values())
        values: list[T] = []
        for source in sources:
            try:
                values.append(source())
            except Exception:
                self._logger.exception("%s source %r failed; ignored", self._what, source)
        return values
