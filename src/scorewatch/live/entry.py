"""`ScorerEntry`: one scorer attached to live traffic, with its sampling and filter."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.scorer import Scorer
from .context import LiveCall
from .sampling import Sampling

__all__ = ["LiveFilter", "ScorerEntry"]

LiveFilter = Callable[[LiveCall], bool]
"""A synchronous predicate over the call; runs before sampling. Falsy or raising skips the call."""


@dataclass(frozen=True, slots=True)
class ScorerEntry:
    scorer: Scorer
    sampling: Sampling = field(default_factory=Sampling.none)
    filter: LiveFilter | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scorer, Scorer):
            raise TypeError(
                f"ScorerEntry.scorer must be a Scorer, got {type(self.scorer).__name__}"
            )
        sampling: Any = self.sampling
        if not isinstance(sampling, Sampling):
            object.__setattr__(self, "sampling", Sampling.coerce(sampling))
        if self.filter is not None and not callable(self.filter):
            raise TypeError("ScorerEntry.filter must be callable")

    @classmethod
    def coerce(cls, value: ScorerEntry | Scorer | Mapping[str, Any]) -> ScorerEntry:
        if isinstance(value, ScorerEntry):
            return value
        if isinstance(value, Scorer):
            return cls(value)
        if isinstance(value, Mapping):
            return cls(**value)
        raise TypeError(
            f"a live scorer is a ScorerEntry, a Scorer or a mapping, got {type(value).__name__}"
        )
