"""`LiveScorerEntry`: one scorer attached to live traffic, with its sampling and filter.

Not to be confused with `scorewatch.ScorerEntry`, a scorer with a pass threshold for batch
evaluation (the reference system's `ScorerEntry`); this is its `MastraScorerEntry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.scorer import Scorer
from ..sinks.call import ScoredCall
from .sampling import Sampling

__all__ = ["LiveFilter", "LiveScorerEntry"]

LiveFilter = Callable[[ScoredCall], bool]
"""A synchronous predicate over the call; runs before sampling. Falsy or raising skips the call."""


@dataclass(frozen=True, slots=True)
class LiveScorerEntry:
    scorer: Scorer
    sampling: Sampling = field(default_factory=Sampling.none)
    filter: LiveFilter | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scorer, Scorer):
            raise TypeError(
                f"LiveScorerEntry.scorer must be a Scorer, got {type(self.scorer).__name__}"
            )
        sampling: Any = self.sampling
        if not isinstance(sampling, Sampling):
            object.__setattr__(self, "sampling", Sampling.coerce(sampling))
        if self.filter is not None and not callable(self.filter):
            raise TypeError("LiveScorerEntry.filter must be callable")

    @classmethod
    def coerce(cls, value: LiveScorerEntry | Scorer | Mapping[str, Any]) -> LiveScorerEntry:
        if isinstance(value, LiveScorerEntry):
            return value
        if isinstance(value, Scorer):
            return cls(value)
        if isinstance(value, Mapping):
            return cls(**value)
        raise TypeError(
            f"a live scorer is a LiveScorerEntry, a Scorer or a mapping, got {type(value).__name__}"
        )
