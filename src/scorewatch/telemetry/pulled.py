"""Observable instruments read from the event bus's pulled readings when they are collected."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from opentelemetry.metrics import CallbackOptions, Observation

from ..core.events import Observers

__all__ = ["Source", "per_reading", "pulled"]

R = TypeVar("R")

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


def per_reading(
    latest: Callable[[Observers], Iterable[R]],
    value: Callable[[R], float],
    attributes: Callable[[R], Mapping[str, str]],
) -> Callable[[Observers], Iterable[Observation]]:
    """`observe` for `pulled`: one observation per reading `latest(bus)` gives, its `value`
    with its `attributes` (a gauge over several streams, scorers, ...)."""

    def observe(bus: Observers) -> Iterable[Observation]:
        return [Observation(value(reading), dict(attributes(reading))) for reading in latest(bus)]

    return observe
