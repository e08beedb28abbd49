"""Deterministic sampling of live traffic (docs/reference-semantics.md, "Live scoring").

The decision hashes the trace id (else the run id), so a trace is scored by every scorer sampled
at the same rate, or by none of them, in every process that sees it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Sampling"]

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

    def should_sample(self, key: str) -> bool:
        """True when the trace or run identified by `key` is to be scored."""
        if self.rate is None:
            return True
        return fraction_of(key) < self.rate


def fraction_of(key: str) -> float:
    """Where `key` falls in [0, 1): the first 6 bytes of its SHA-256, over 2^48."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:6], "big") / _SPAN
