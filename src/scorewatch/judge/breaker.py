"""A judge that keeps rejecting its credentials is paused instead of called for every run.

A wrong key fails every call the same way, and the provider may count each try against the
account. After `threshold` credential failures in a row (`AUTHENTICATION_FAILED`,
`PERMISSION_DENIED`), the judge stops calling for `pause_s` seconds: each call it would have made
fails at once with `JUDGE_PAUSED` (no request sent; the run fails as before, and telemetry counts
it under that `error.type`). The first call after the pause goes out: a success closes the
breaker, another rejection pauses it again. Other failures (timeouts, 5xx) neither count nor
break the row; a success does.
"""

from __future__ import annotations

import logging
import threading
import time

from .errors import JudgeError, JudgeProviderError

__all__ = ["CREDENTIAL_CODES", "JUDGE_PAUSED", "CredentialBreaker"]

JUDGE_PAUSED = "JUDGE_PAUSED"
CREDENTIAL_CODES = frozenset({"AUTHENTICATION_FAILED", "PERMISSION_DENIED"})

logger = logging.getLogger("scorewatch.judge")


class CredentialBreaker:
    """Counts credential rejections in a row for one judge and pauses its calls."""

    def __init__(self, threshold: int = 3, pause_s: float = 60.0) -> None:
        if threshold < 1:
            raise ValueError(f"threshold must be >= 1, got {threshold}")
        if pause_s < 0:
            raise ValueError(f"pause_s must be >= 0 seconds, got {pause_s}")
        self.threshold = threshold
        self.pause_s = pause_s
        self.paused_calls = 0
        """Calls refused while paused, since the judge was built."""
        self._in_a_row = 0
        self._until = 0.0
        self._last: JudgeError | None = None
        self._lock = threading.Lock()

    def check(self, model: str) -> None:
        """Raise `JUDGE_PAUSED` while the pause lasts; return when a call may go out."""
        with self._lock:
            left = self._until - time.monotonic()
            if left <= 0:
                return
            self.paused_calls += 1
            last = self._last
        hint = f" ({last.message})" if last is not None else ""
        raise JudgeProviderError(
            f"judge model {model!r} is paused for {left:.0f}s more after {self.threshold} "
            f"credential failure(s) in a row; no call was made{hint}",
            code=JUDGE_PAUSED,
            category="USER",
            retryable=False,
            status_code=last.status_code if last is not None else None,
        )

    def succeeded(self) -> None:
        with self._lock:
            self._in_a_row = 0
            self._until = 0.0

    def failed(self, model: str, error: JudgeError) -> None:
        if error.code not in CREDENTIAL_CODES:
            return
        with self._lock:
            self._in_a_row += 1
            self._last = error
            if self._in_a_row < self.threshold:
                return
            self._until = time.monotonic() + self.pause_s
            in_a_row = self._in_a_row
        logger.warning(
            "judge model %r: %d credential failure(s) in a row (%s); calls paused for %gs",
            model,
            in_a_row,
            error.code,
            self.pause_s,
        )
