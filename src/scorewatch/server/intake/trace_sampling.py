"""Which traces any scorer samples, decided from the trace id alone, before spans are converted.

Live sampling is by trace id (`live.entry.fraction_of`): a run of a trace is sampled by a scorer
when the trace id's fraction is under the scorer's rate. A run's filter sees its call, which
exists only after extraction, and a spend budget hears every call it decides; but when no scorer
that may sample has a filter or a budget, whether any scorer will sample a trace's runs follows
from its id alone. Serve's trace intake then skips converting and extracting the spans of a
trace no scorer samples (docs/traces.md, "Traces no scorer samples").

>>> from scorewatch.core.scorer import create_scorer
>>> from scorewatch.live.entry import LiveScorerEntry, Sampling
>>> half = LiveScorerEntry(create_scorer(id="s", description="s").generate_score(lambda c: 1.0),
...                        sampling=Sampling.ratio(0.5))
>>> sampling = TraceSampling.of([half])
>>> sampling is not None and sampling.rate
0.5
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...live.entry import LiveScorerEntry, fraction_of

__all__ = ["TraceSampling"]


@dataclass(frozen=True, slots=True)
class TraceSampling:
    """Whether any scorer samples a trace: `rate` is the highest rate of the scorers that may
    sample at all (None: one of them samples every trace)."""

    rate: float | None

    @classmethod
    def of(
        cls,
        entries: Iterable[LiveScorerEntry],
        *,
        governed: Callable[[LiveScorerEntry], bool] = lambda entry: False,
    ) -> TraceSampling | None:
        """The decision of `entries` (the scorers that score trace runs), or None when it cannot
        be made from the trace id: a scorer that may sample has a filter, or is `governed` by a
        spend budget (which hears every call, sampled or not)."""
        highest: float | None = 0.0
        for entry in entries:
            rate = entry.sampling.rate
            if governed(entry):
                return None
            if rate == 0.0:
                continue  # never samples, whatever its filter says
            if entry.filter is not None:
                return None
            highest = None if rate is None or highest is None else max(highest, rate)
        return cls(highest)

    def sampled(self, trace_id: bytes) -> bool:
        """Whether any scorer samples the runs of the trace with this (raw) id: the decision
        admission makes on the run's trace id (lowercase hex). An empty id is true unless no
        scorer samples at all: the runs of such a trace are sampled by their own run ids."""
        rate = self.rate
        if rate == 0.0:
            return False
        if rate is None or not trace_id:
            return True
        return fraction_of(trace_id.hex()) < rate
