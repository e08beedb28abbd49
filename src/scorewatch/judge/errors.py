"""Errors raised at the model boundary, each with a stable code.

A judge error never carries an API key, request headers or a response body: only what a person
needs to act (class name, message, code, HTTP status, request id, whether a retry may help). The
provider's own exception stays reachable through `__cause__`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ScorewatchError
from .usage import JudgeUsage

__all__ = [
    "QUOTABLE_JUDGE_ERRORS",
    "JudgeError",
    "JudgeProviderError",
    "JudgeTimeoutError",
    "StructuredOutputError",
]


class JudgeError(ScorewatchError):
    """A judge call failed.

    `usage`, `text` and `finish_reason` carry the evidence of a model call that completed before
    the failure (for example a reply that could not be used), so the judge record can count it.
    """

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str = "JUDGE_CALL_FAILED",
        category: str = "THIRD_PARTY",
        status_code: int | None = None,
        request_id: str | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
        usage: JudgeUsage | None = None,
        text: str | None = None,
        finish_reason: str | None = None,
        model_call_count: int = 0,
    ) -> None:
        super().__init__(message, code=code, domain="JUDGE", category=category)  # type: ignore[arg-type]
        self.status_code = status_code
        self.request_id = request_id
        if retryable is not None:
            self.retryable = retryable
        self.retry_after = retry_after
        self.usage = usage
        self.text = text
        self.finish_reason = finish_reason
        self.model_call_count = model_call_count
        if status_code is not None:
            self.details["statusCode"] = status_code
        if request_id is not None:
            self.details["requestId"] = request_id
        self.details["retryable"] = self.retryable

    @property
    def is_retryable(self) -> bool:
        return self.retryable

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        cause = self.__cause__
        if cause is not None and not isinstance(cause, ScorewatchError):
            # A provider client's message can quote the response body: name the cause only.
            data["cause"] = {"name": type(cause).__name__}
        return data


class JudgeProviderError(JudgeError):
    """The provider answered with an error status, or the connection failed."""


class JudgeTimeoutError(JudgeError):
    """The call did not finish within its timeout."""

    retryable = True

    def __init__(self, message: str, **kwargs: object) -> None:
        kwargs.setdefault("code", "TIMEOUT")
        super().__init__(message, **kwargs)  # type: ignore[arg-type]


class StructuredOutputError(JudgeError):
    """The model answered, but not with JSON that fits the step's schema.

    Codes: `STRUCTURED_OUTPUT_JSON_PARSE_FAILED`, `STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED`,
    `STRUCTURED_OUTPUT_OBJECT_UNDEFINED`, `STRUCTURED_OUTPUT_TRUNCATED`. These trigger the one
    JSON-prompt-injection fallback attempt.
    """

    def __init__(self, message: str, *, code: str, **kwargs: object) -> None:
        kwargs.setdefault("category", "THIRD_PARTY")
        super().__init__(message, code=code, retryable=False, **kwargs)  # type: ignore[arg-type]


QUOTABLE_JUDGE_ERRORS = frozenset({JudgeProviderError.__name__, JudgeTimeoutError.__name__})
"""Judge errors whose messages scorewatch writes itself, from the HTTP status, the model id, the
key's variable and the endpoint: never a prompt, an answer or a key, so a service may log them."""
