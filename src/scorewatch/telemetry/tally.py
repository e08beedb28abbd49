"""`Tally`: totals added on a hot path, reported by an observable instrument when collected.

An SDK `Counter.add` hashes its attributes, takes the aggregation's lock and offers the value
to the exemplar reservoir, on every call: for series counted once per run or per decision that
is most of what the count costs. A tally adds under one lock to a dict keyed by what the caller
precomputed, and the SDK reads the totals (cumulative, as observable counters report them) only
when a reader collects. The series, names and attributes are those the synchronous instrument
made; what is lost is the exemplar of each addition, which no counter here exports.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable

from opentelemetry.metrics import CallbackOptions, Observation

from .describe import Attributes

__all__ = ["Tally", "items_attributes"]


def items_attributes(key: Hashable) -> Attributes:
    """The default description of a key: the attributes' items, as a tuple of pairs."""
    return dict(key)  # type: ignore[call-overload, no-any-return]


class Tally:
    """Totals per key, added from any thread; `describe` turns a key into the attributes of
    its series, once, the first time the key is added."""

    __slots__ = ("_attributes", "_describe", "_lock", "_totals")

    def __init__(self, describe: Callable[[Hashable], Attributes] = items_attributes) -> None:
        self._describe = describe
        self._lock = threading.Lock()
        self._totals: dict[Hashable, float] = {}
        self._attributes: dict[Hashable, Attributes] = {}

    def add(self, key: Hashable, amount: float = 1) -> None:
        """Add `amount` to the series of `key`: nothing is hashed but the key."""
        with self._lock:
            total = self._totals.get(key)
            if total is None:
                self._attributes[key] = self._describe(key)
                total = 0
            self._totals[key] = total + amount

    def total(self, key: Hashable) -> float:
        """The total of `key` so far (0 before its first addition)."""
        with self._lock:
            return self._totals.get(key, 0)

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        """The callback of the observable instrument reporting these totals."""
        with self._lock:
            totals = list(self._totals.items())
        attributes = self._attributes
        return [Observation(total, attributes[key]) for key, total in totals]
