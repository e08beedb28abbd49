"""Storing one result in every sink, telling a bad row from a sink that is down.

A sink that refuses a result's row for a reason of the row's own (`RowsRefusedError`) gets,
instead, the run as a failure with code `unstorable` and none of the content: the client sees a
failed run rather than nothing, and the same row is never retried forever. The sinks that already
stored the original get that failure too, so every sink tells the same story. Any other error
means the sink itself failed: `retry` decides whether (and after how long) to write again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from ..core.events import current_observers
from .base import RowsRefusedError, ScoreSink
from .record import ScoreRecord

__all__ = ["UNSTORABLE", "Delivery", "SinkRetry", "deliver", "unstorable"]

UNSTORABLE: Final = "unstorable"

SinkRetry = Callable[[str, int, Exception], Awaitable[bool]]
"""(sink name, failed attempts so far, last error) -> write again? May sleep first."""

_Outcome = Literal["stored", "refused", "dropped"]


@dataclass(slots=True)
class Delivery:
    """What became of one result: `stored` is what the sinks hold (the result, or its
    `unstorable` failure); `refused` names the sinks that refused its row, `unstorable` those
    that refused even the failure, `dropped` those that gave up (down when `retry` said stop)."""

    stored: ScoreRecord
    refused: list[str] = field(default_factory=list)
    unstorable: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every sink holds `stored`."""
        return not self.unstorable and not self.dropped


def unstorable(result: ScoreRecord, sink: str, error: BaseException) -> ScoreRecord:
    """`result` as a failed run without its content: what a sink that refused it stores."""
    call = dataclasses.replace(
        result.call,
        input=None,
        output=None,
        request_context=None,
        ground_truth=None,
        metadata=None,
    )
    return dataclasses.replace(
        result,
        call=call,
        status="failed",
        result=None,
        error=f"the {sink} sink refused this run's row ({type(error).__name__}); "
        "its content was not stored",
        error_code=UNSTORABLE,
        error_type=type(error).__name__,
        failed_step=None,
        completed_steps=(),
    )


async def deliver(
    sinks: Sequence[ScoreSink],
    result: ScoreRecord,
    on_error: Callable[[str, Exception], None],
    retry: SinkRetry | None = None,
) -> Delivery:
    """Write `result` to every sink (see the module's doc). Each failed attempt is counted in
    telemetry (the `sink_error` event) and reported to `on_error(sink name, error)` from inside the
    `except`; without `retry`, a failing sink gets one attempt."""
    delivery = Delivery(result)
    holding: list[ScoreSink] = []
    for sink in sinks:
        name = _name(sink)
        outcome, error = await _write(sink, name, delivery.stored, on_error, retry)
        if outcome == "refused" and delivery.stored is result:
            assert error is not None
            delivery.refused.append(name)
            delivery.stored = unstorable(result, name, error)
            for earlier in holding:  # they hold the original: bring them in line
                await _settle(delivery, earlier, on_error, retry)
            holding = [s for s in holding if _name(s) not in delivery.dropped]
            outcome, error = await _write(sink, name, delivery.stored, on_error, retry)
        if outcome == "stored":
            holding.append(sink)
        elif outcome == "refused":
            delivery.unstorable.append(name)
        else:
            delivery.dropped.append(name)
    return delivery


async def _settle(
    delivery: Delivery,
    sink: ScoreSink,
    on_error: Callable[[str, Exception], None],
    retry: SinkRetry | None,
) -> None:
    name = _name(sink)
    outcome, _error = await _write(sink, name, delivery.stored, on_error, retry)
    if outcome == "refused":
        delivery.unstorable.append(name)
    elif outcome == "dropped":
        delivery.dropped.append(name)


async def _write(
    sink: ScoreSink,
    name: str,
    result: ScoreRecord,
    on_error: Callable[[str, Exception], None],
    retry: SinkRetry | None,
) -> tuple[_Outcome, Exception | None]:
    attempts = 0
    while True:
        try:
            await sink.write([result])
            return "stored", None
        except RowsRefusedError as refused:
            current_observers().sink_error(name)
            on_error(name, refused)
            cause = refused.refused[0][1] if refused.refused else refused
            return "refused", cause if isinstance(cause, Exception) else refused
        except Exception as error:
            attempts += 1
            current_observers().sink_error(name)
            on_error(name, error)
            if retry is None or not await retry(name, attempts, error):
                return "dropped", error


def _name(sink: ScoreSink) -> str:
    return str(getattr(sink, "name", type(sink).__name__))
