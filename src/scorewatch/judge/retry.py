"""When and how long to wait before retrying a failed judge call."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .errors import JudgeError

__all__ = ["NO_RETRY", "RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter, honouring the provider's `Retry-After`.

    Only errors marked retryable (408, 429, 5xx, timeouts, dropped connections) are retried;
    every retry is a separate judge attempt in the judge record.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 20.0
    multiplier: float = 2.0
    jitter: bool = True
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("retry delays must be >= 0")

    def should_retry(self, error: BaseException, retries_done: int) -> bool:
        return retries_done < self.max_retries and isinstance(error, JudgeError) and error.retryable

    def delay(self, error: BaseException, retries_done: int) -> float:
        """Seconds to wait before retry number `retries_done + 1`."""
        retry_after = error.retry_after if isinstance(error, JudgeError) else None
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * self.multiplier**retries_done)
        return random.uniform(0, ceiling) if self.jitter else ceiling


NO_RETRY = RetryPolicy(max_retries=0)
