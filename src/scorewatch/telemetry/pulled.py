"""Observable instruments read from the event bus's pulled readings when they are collected."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, Observation

from ..core.events import Observers

__all__ = ["Source", "pulled"]

Source = Callable[[], Observers | None]
"""The bus an instrument reads from; None silences it (instruments cannot be removed from a
MeterProvider, so a shut-down instrumentation keeps its callbacks but reports nothing)."""


def pulled(
    source: Source, observe: Callable[[Observers], Iterable[Observation]]
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    """An instrument callback: `observe(bus)` while `source()` names a bus, else nothing."""

    def callback(options: CallbackOptions) -> Iterable[Observation]:
        bus = source()
        return [] if bus is None else observe(bus)

    return callback
