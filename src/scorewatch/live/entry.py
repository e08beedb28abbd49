"""`LiveScorerEntry`: one scorer attached to live traffic, with its sampling and filter, and what
they decide for one call (docs/reference-semantics.md, "Live scoring").

Sampling is deterministic: the decision hashes the trace id (else the run id), so a trace is
scored by every scorer sampled at the same rate, or by none of them, in every process that sees
it.

Not to be confused with `scorewatch.ScorerEntry`, a scorer with a pass threshold for batch
evaluation (the reference system's `ScorerEntry`); this is its `MastraScorerEntry`.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._throttled_log import ThrottledLog
from ..core.call import AgentCall
from ..core.scorer import Scorer

__all__ = [
    "Decision",
    "LiveFilter",
    "LiveScorerEntry",
    "Sampling",
    "fraction_of",
    "in_review_sample",
]

logger = logging.getLogger("scorewatch.live")

_SPAN = float(1 << 48)


@dataclass(frozen=True, slots=True)
class Sampling:
    """`Sampling.none()` scores everything; `Sampling.ratio(rate)` scores a `rate` share of keys.

    `rate is None` means "no sampling" (the reference system's `{type: 'none'}`).
    """

    rate: float | None = None

    def __post_init__(self) -> None:
        rate = self.rate
        if rate is None:
            return
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate):
            raise ValueError(f"a sampling rate is a number between 0 and 1, got {rate!r}")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"a sampling rate is between 0 and 1, got {rate!r}")

    @classmethod
    def none(cls) -> Sampling:
        return cls(None)

    @classmethod
    def ratio(cls, rate: float) -> Sampling:
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            raise ValueError(f"a sampling rate is a number between 0 and 1, got {rate!r}")
        return cls(float(rate))

    @classmethod
    def coerce(cls, value: Sampling | Mapping[str, Any] | None) -> Sampling:
        """Accept a `Sampling`, None, or the reference system's `{"type": ..., "rate": ...}`."""
        if value is None:
            return cls.none()
        if isinstance(value, Sampling):
            return value
        if isinstance(value, Mapping):
            kind = value.get("type")
            if kind == "none":
                return cls.none()
            if kind == "ratio":
                return cls.ratio(value["rate"])
            raise ValueError(f"unknown sampling type {kind!r}; expected 'none' or 'ratio'")
        raise TypeError(f"sampling must be a Sampling or a mapping, got {type(value).__name__}")

    @property
    def keyed(self) -> bool:
        """Whether `should_sample` reads its key: rates 0 and 1 (and none) decide without it."""
        rate = self.rate
        return rate is not None and 0.0 < rate < 1.0

    def should_sample(self, key: str) -> bool:
        """True when the trace or run identified by `key` is to be scored."""
        rate = self.rate
        if rate is None or rate >= 1.0:
            return True
        if rate <= 0.0:  # no key falls below 0: nothing to hash
            return False
        return fraction_of(key) < rate


def fraction_of(key: str) -> float:
    """Where `key` falls in [0, 1): the first 6 bytes of its SHA-256, over 2^48."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:6], "big") / _SPAN


def in_review_sample(run_id: str, rate: float) -> bool:
    """Whether a run is in its scorer's review sample (`LiveScorerEntry.review_rate`):
    deterministic in the run id, so every process and every redelivery marks the same runs, and
    keyed apart from trace sampling (a sampled trace is no likelier to be reviewed)."""
    return rate > 0 and fraction_of(f"review:{run_id}") < rate


Decision = Literal["sampled", "filtered", "not_sampled"]
"""What the filter and sampling make of one call for one scorer."""

LiveFilter = Callable[[AgentCall], bool]
"""A synchronous predicate over the call; runs before sampling. Falsy or raising skips the call."""


@dataclass(frozen=True, slots=True)
class LiveScorerEntry:
    scorer: Scorer
    sampling: Sampling = field(default_factory=Sampling.none)
    filter: LiveFilter | None = None
    review_rate: float = 0.0
    """Share of this scorer's successful live runs marked for human review, decided from the
    run id (`in_review_sample`) and stored with the score row (`reviewSampled`)."""
    budget_usd_per_day: float | None = None
    """This scorer's own judge spend budget (live/budgets.py); None: only a shared one, if any."""

    def __post_init__(self) -> None:
        if not isinstance(self.scorer, Scorer):
            raise TypeError(
                f"LiveScorerEntry.scorer must be a Scorer, got {type(self.scorer).__name__}"
            )
        rate = self.review_rate
        if (
            isinstance(rate, bool)
            or not isinstance(rate, int | float)
            or not math.isfinite(rate)
            or not 0.0 <= rate <= 1.0
        ):
            raise ValueError(f"a review rate is a number between 0 and 1, got {rate!r}")
        sampling: Any = self.sampling
        if not isinstance(sampling, Sampling):
            object.__setattr__(self, "sampling", Sampling.coerce(sampling))
        if self.filter is not None and not callable(self.filter):
            raise TypeError("LiveScorerEntry.filter must be callable")
        budget = self.budget_usd_per_day
        if budget is not None and (
            isinstance(budget, bool)
            or not isinstance(budget, int | float)
            or not (math.isfinite(budget) and budget > 0)
        ):
            raise ValueError(
                "LiveScorerEntry.budget_usd_per_day must be a positive number of USD, "
                f"got {budget!r}"
            )

    def decide(self, call: AgentCall | None, sample_key: str, warn: ThrottledLog) -> Decision:
        """`sampled`, `filtered` or `not_sampled` for one scorer on one call (filter, then
        sampling). A raising or asynchronous filter skips the call; `warn` logs it, by error type
        only, as its text may quote the call's content. `call` may be None for an entry without
        a filter, whose decision reads `sample_key` alone (the caller need not make the call)."""
        if self.filter is not None:
            if call is None:
                raise TypeError("a live filter is asked about a call: none was given")
            try:
                keep = self.filter(call)
                if inspect.isawaitable(keep):
                    if inspect.iscoroutine(keep):
                        keep.close()
                    raise TypeError("a live filter must be synchronous; it returned an awaitable")
            except Exception as error:
                warn.warning(
                    f"filter:{self.scorer.id}",
                    "live filter of scorer %r raised; call skipped (counted as filtered): %s",
                    self.scorer.id,
                    type(error).__name__,
                )
                return "filtered"
            if not keep:
                return "filtered"
        try:
            sampled = self.sampling.should_sample(sample_key)
        except Exception:
            logger.warning("live sampling of scorer %r failed; skipped", self.scorer.id)
            return "not_sampled"
        return "sampled" if sampled else "not_sampled"

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
