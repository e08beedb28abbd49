"""Admission of human labels (`POST /v1/labels`): each annotator has a budget of their own.

A person labels a few runs a minute; a script posting as one annotator can send thousands a
second, and every label is a lookup and a write in the store the scores live in. So each
annotator gets a budget of labels, refilled at `server.labels_per_second` up to
`server.label_burst`: a request whose annotators' budgets hold its labels is admitted and spends
them; one that does not is refused whole with 429 and the `Retry-After` of its fullest
deficit, as `/v1/scores` refuses work past what the service finishes
(`src/scorewatch/server/intake/admission.py`). One annotator's flood thus empties that
annotator's budget only: everyone else's labels are admitted as before.

The budgets are this process's (each worker of `serve --workers N` keeps its own), and
bounded: at most `max_annotators` are tracked; when that many are, the budgets that have
refilled (nothing to remember) are forgotten first, and a new annotator is refused only while
every tracked one is still spending.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["AnnotatorBudget", "LabelsRefusedForRate"]

DEFAULT_MAX_ANNOTATORS: Final = 10_000


@dataclass(frozen=True, slots=True)
class LabelsRefusedForRate:
    """Why a request was refused: the annotator furthest over budget and how long (whole
    seconds, at least 1) until their budget holds the request's labels."""

    annotator: str
    retry_after: int


class AnnotatorBudget:
    """Token buckets of labels, one per annotator: `rate` labels a second, `burst` at most."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        max_annotators: int = DEFAULT_MAX_ANNOTATORS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1 or max_annotators < 1:
            raise ValueError("rate, burst and max_annotators must be positive")
        self.rate = float(rate)
        self.burst = float(burst)
        self._max = max_annotators
        self._clock = clock
        # annotator -> (labels in the budget, when it was last brought up to date)
        self._budgets: dict[str, tuple[float, float]] = {}

    def _level(self, annotator: str, now: float) -> float:
        held = self._budgets.get(annotator)
        if held is None:
            return self.burst
        level, at = held
        return min(self.burst, level + (now - at) * self.rate)

    def admit(self, wanted: Mapping[str, int]) -> LabelsRefusedForRate | None:
        """Spend `wanted` (annotator -> labels in this request) and return None, or spend
        nothing and say who is over budget and for how long."""
        now = self._clock()
        levels = {name: self._level(name, now) for name in wanted}
        worst: LabelsRefusedForRate | None = None
        for name, count in wanted.items():
            deficit = count - levels[name]
            if deficit > 0:
                wait = max(1, math.ceil(deficit / self.rate))
                if worst is None or wait > worst.retry_after:
                    worst = LabelsRefusedForRate(name, wait)
        if worst is not None:
            return worst
        fresh = [name for name in wanted if name not in self._budgets]
        if fresh and len(self._budgets) + len(fresh) > self._max:
            self._forget_refilled(now)
            if len(self._budgets) + len(fresh) > self._max:
                # Every tracked annotator is still spending: a new name waits its turn.
                return LabelsRefusedForRate(fresh[0], max(1, math.ceil(self.burst / self.rate)))
        for name, count in wanted.items():
            self._budgets[name] = (levels[name] - count, now)
        return None

    def _forget_refilled(self, now: float) -> None:
        for name in [n for n in self._budgets if self._level(n, now) >= self.burst]:
            del self._budgets[name]

    @property
    def tracked(self) -> int:
        """How many annotators' budgets are remembered."""
        return len(self._budgets)
