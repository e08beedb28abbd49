"""Scrapes sharing renderings: any number of scrapers cost one rendering per `max_age` seconds.

Rendering a registry is CPU work (about 50 ms for a megabyte of exposition, more gzipped). One
scraper every few seconds is nothing, but scrapers are not trusted to be few: sixteen of them
scraping back to back rendered the registry dozens of times a second, and the CPU that took
starved a service's own traffic (issue 28 item 9). Here a rendering is shared by every scrape
asking for the same thing (format, encoding, `name[]`) while it is in progress, and reused for
`max_age` seconds after; renderings run one at a time, in a worker thread, never on the event
loop.

```python
from scorewatch.telemetry.scrape_cache import SharedRenders

renders = SharedRenders(max_age=1.0)
# in an async handler: body = await renders.get(("text", None), lambda: b"metric 1\\n")
```
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["SharedRenders"]

T = TypeVar("T")


class SharedRenders(Generic[T]):
    """Renderings by key, each made once per `max_age` seconds (0: every scrape renders, but
    concurrent scrapes still share one), at most `keys` kept."""

    def __init__(self, max_age: float, *, keys: int = 16) -> None:
        self._max_age = max_age
        self._keys = keys
        self._kept: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()
        self._pending: dict[Hashable, asyncio.Future[T]] = {}
        # One rendering at a time, whichever loop or key asks: their CPU cost stays one thread.
        self._one_at_a_time = threading.Lock()
        self.renderings = 0

    async def get(self, key: Hashable, render: Callable[[], T]) -> T:
        kept = self._kept.get(key)
        if kept is not None and time.monotonic() - kept[0] < self._max_age:
            return kept[1]
        loop = asyncio.get_running_loop()
        pending = self._pending.get(key)
        if pending is not None and pending.get_loop() is loop:
            return await asyncio.shield(pending)
        future: asyncio.Future[T] = loop.create_future()
        self._pending[key] = future
        try:
            result = await asyncio.to_thread(self._render, render)
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            if self._pending.get(key) is future:
                del self._pending[key]
        future.set_result(result)
        self._kept[key] = (time.monotonic(), result)
        self._kept.move_to_end(key)
        while len(self._kept) > self._keys:
            self._kept.popitem(last=False)
        return result

    def _render(self, render: Callable[[], T]) -> T:
        with self._one_at_a_time:
            self.renderings += 1
            return render()
