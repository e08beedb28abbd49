"""`CallbackSink`: hand each result to a function of yours (sync or async)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from ..result import LiveResult

__all__ = ["CallbackSink"]


class CallbackSink:
    """Calls `fn(result)` once per result, on the event loop that ran the scorer (the caller's
    loop, or scorewatch's background thread). A slow `fn` delays only the scoring queue."""

    def __init__(
        self, fn: Callable[[LiveResult], Awaitable[object] | object], *, name: str = "callback"
    ) -> None:
        if not callable(fn):
            raise TypeError("CallbackSink needs a callable")
        self._fn = fn
        self.name = name

    async def write(self, results: Sequence[LiveResult]) -> None:
        for result in results:
            outcome = self._fn(result)
            if inspect.isawaitable(outcome):
                await outcome

    async def aclose(self) -> None:
        return None
