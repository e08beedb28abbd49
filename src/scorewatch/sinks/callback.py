"""`CallbackSink`: hand each result to a function of yours (sync or async)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from .base import RowsRefusedError
from .record import ScoreRecord

__all__ = ["CallbackSink"]


class CallbackSink:
    """Calls `fn(result)` once per result, on the event loop that ran the scorer (the caller's
    loop, or scorewatch's background thread). A slow `fn` delays only the scoring queue."""

    def __init__(
        self, fn: Callable[[ScoreRecord], Awaitable[object] | object], *, name: str = "callback"
    ) -> None:
        if not callable(fn):
            raise TypeError("CallbackSink needs a callable")
        self._fn = fn
        self.name = name

    async def write(self, results: Sequence[ScoreRecord]) -> None:
        """Every result gets its call, whatever the others do. An `OSError` (a connection
        your function makes failing) counts as the destination being down; any other error
        refuses that result alone (`RowsRefusedError` once all were handed over)."""
        refused: list[tuple[ScoreRecord, BaseException]] = []
        for result in results:
            try:
                outcome = self._fn(result)
                if inspect.isawaitable(outcome):
                    await outcome
            except OSError:
                raise
            except Exception as error:
                refused.append((result, error))
        if refused:
            raise RowsRefusedError(refused)

    async def aclose(self) -> None:
        return None
