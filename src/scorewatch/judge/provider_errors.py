"""Turning a provider client's exception into a `JudgeError` with a stable code.

The classification reads only the exception's type chain, its HTTP status and two response
headers (`Retry-After`, the request id). The message is written here from the status and the
model id: a provider's own message can quote the response body, so it is never copied. The
provider exception stays reachable as `__cause__` (the caller raises `... from exc`).

| code                      | when                                             | retryable |
|---------------------------|--------------------------------------------------|-----------|
| `RATE_LIMITED`            | HTTP 429                                         | yes       |
| `TIMEOUT`                 | HTTP 408, a client-side timeout                  | yes       |
| `PROVIDER_ERROR`          | HTTP 500 and other 5xx                           | yes       |
| `PROVIDER_UNAVAILABLE`    | HTTP 502, 503, 504                               | yes       |
| `CONNECTION_ERROR`        | connection refused, reset or dropped             | yes       |
| `MALFORMED_RESPONSE`      | a 2xx whose body is not a chat completion        | yes       |
| `RESPONSE_TOO_LARGE`      | a body over the fast client's cap, decompressed  | yes       |
| `REDIRECT_NOT_FOLLOWED`   | HTTP 3xx (judge calls never follow a redirect)   | no        |
| `PROXY_UNSUPPORTED`       | the environment's proxy is not http(s)           | no        |
| `CONTEXT_LENGTH_EXCEEDED` | the prompt does not fit the model's context      | no        |
| `BAD_REQUEST`             | HTTP 400, 422 and other 4xx                      | no        |
| `AUTHENTICATION_FAILED`   | HTTP 401                                         | no        |
| `MISSING_API_KEY`         | no key given, none in the provider's variable    | no        |
| `PERMISSION_DENIED`       | HTTP 403                                         | no        |
| `MODEL_NOT_FOUND`         | HTTP 404                                         | no        |
| `PAYMENT_REQUIRED`        | HTTP 402                                         | no        |
| `JUDGE_CALL_FAILED`       | anything else                                    | no        |
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ErrorCategory
from .errors import JudgeError, JudgeProviderError, JudgeTimeoutError

__all__ = ["classify_provider_error", "missing_key_error", "parse_retry_after"]


@dataclass(frozen=True, slots=True)
class _Kind:
    code: str
    retryable: bool
    category: ErrorCategory
    what: str


_BY_STATUS: dict[int, _Kind] = {
    400: _Kind("BAD_REQUEST", False, "USER", "rejected the request as invalid"),
    401: _Kind("AUTHENTICATION_FAILED", False, "USER", "rejected the credentials"),
    402: _Kind("PAYMENT_REQUIRED", False, "USER", "requires payment"),
    403: _Kind("PERMISSION_DENIED", False, "USER", "denied permission"),
    404: _Kind("MODEL_NOT_FOUND", False, "USER", "does not know the model or endpoint"),
    408: _Kind("TIMEOUT", True, "THIRD_PARTY", "timed out"),
    429: _Kind("RATE_LIMITED", True, "THIRD_PARTY", "rate-limited the request"),
    500: _Kind("PROVIDER_ERROR", True, "THIRD_PARTY", "failed with an internal error"),
    502: _Kind("PROVIDER_UNAVAILABLE", True, "THIRD_PARTY", "is unavailable (bad gateway)"),
    503: _Kind("PROVIDER_UNAVAILABLE", True, "THIRD_PARTY", "is unavailable"),
    504: _Kind("PROVIDER_UNAVAILABLE", True, "THIRD_PARTY", "is unavailable (gateway timeout)"),
}
_OTHER_CLIENT_ERROR = _Kind("BAD_REQUEST", False, "USER", "rejected the request")
_OTHER_SERVER_ERROR = _Kind("PROVIDER_ERROR", True, "THIRD_PARTY", "failed")
_CONTEXT_LENGTH = _Kind(
    "CONTEXT_LENGTH_EXCEEDED", False, "USER", "rejected a prompt longer than the context window"
)
_CONNECTION = _Kind(
    "CONNECTION_ERROR", True, "THIRD_PARTY", "could not be reached or dropped the connection"
)
_MALFORMED = _Kind("MALFORMED_RESPONSE", True, "THIRD_PARTY", "answered with a malformed body")
_TOO_LARGE = _Kind("RESPONSE_TOO_LARGE", True, "THIRD_PARTY", "answered with a body too large")
_REDIRECT = _Kind(
    "REDIRECT_NOT_FOLLOWED",
    False,
    "USER",
    "answered with a redirect, which judge calls never follow",
)
_PROXY = _Kind(
    "PROXY_UNSUPPORTED",
    False,
    "USER",
    "is behind a proxy of a kind the fast client does not speak to (only http:// and https://; "
    "use transport='litellm')",
)
_TIMEOUT = _BY_STATUS[408]
_UNKNOWN = _Kind("JUDGE_CALL_FAILED", False, "THIRD_PARTY", "call failed")

_CONNECTION_TYPES = frozenset(
    {
        "APIConnectionError",  # openai / litellm
        "ConnectError",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",  # httpx
        "ServerDisconnectedError",
        "ClientConnectionError",
        "ClientOSError",
        "ClientPayloadError",  # aiohttp
    }
)
_TIMEOUT_TYPES = frozenset({"APITimeoutError", "Timeout", "ReadTimeout", "ConnectTimeout"})
_CONTEXT_TYPES = frozenset({"ContextWindowExceededError"})
_MALFORMED_TYPES = frozenset({"MalformedResponseError"})
_TOO_LARGE_TYPES = frozenset({"ResponseTooLargeError"})
_PROXY_TYPES = frozenset({"UnsupportedProxyError"})
_CREDENTIAL_STATUSES = frozenset({401, 403})
_MALFORMED_MARKERS = ("Empty or invalid response", "Invalid response object")


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _type_names(error: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(error).__mro__}


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _headers(error: BaseException) -> Mapping[str, str]:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        headers = getattr(error, "litellm_response_headers", None)
    if headers is None or not hasattr(headers, "get"):
        return {}
    return headers  # type: ignore[no-any-return]


def _kind(error: BaseException) -> tuple[_Kind, int | None]:
    """The failure's kind and the HTTP status the provider actually sent (None if none)."""
    links = list(_chain(error))
    names = [_type_names(link) for link in links]
    status = _status(error)
    if any(_CONTEXT_TYPES & n for n in names):
        return _CONTEXT_LENGTH, status
    if any(_TOO_LARGE_TYPES & n for n in names):
        return _TOO_LARGE, None
    if any(_PROXY_TYPES & n for n in names):
        return _PROXY, None
    if isinstance(error, TimeoutError) or (
        any(_TIMEOUT_TYPES & n for n in names) and status in (None, 408)
    ):
        return _TIMEOUT, status if status == 408 and _has_response(error) else None
    # A dropped connection or an unparseable body reaches us as a status-500 exception made up
    # by the client; the chain below it tells what really happened.
    dropped = any(
        isinstance(link, ConnectionError) or _CONNECTION_TYPES & n
        for link, n in zip(links, names, strict=True)
    )
    if dropped and not any(_TIMEOUT_TYPES & n for n in names):
        return _CONNECTION, None
    if (
        any(isinstance(link, json.JSONDecodeError) for link in links)
        or any(_MALFORMED_TYPES & n for n in names)
        or any(marker in str(link) for link in links[:3] for marker in _MALFORMED_MARKERS)
    ):
        return _MALFORMED, None
    if status is None:
        return _UNKNOWN, None
    if status in _BY_STATUS:
        return _BY_STATUS[status], status
    if 300 <= status < 400:
        return _REDIRECT, status
    if 400 <= status < 500:
        return _OTHER_CLIENT_ERROR, status
    if status >= 500:
        return _OTHER_SERVER_ERROR, status
    return _UNKNOWN, status


def _has_response(error: BaseException) -> bool:
    return getattr(error, "response", None) is not None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = -1.0
        if value >= 0 and value == value:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
        return max(0.0, seconds)
    return seconds if seconds >= 0 and seconds == seconds else None


def _request_id(error: BaseException, headers: Mapping[str, str]) -> str | None:
    value = getattr(error, "request_id", None)
    if isinstance(value, str) and value:
        return value
    for name in ("x-request-id", "request-id", "x-amzn-requestid", "cf-ray"):
        header = headers.get(name)
        if header:
            return str(header)
    return None


def missing_key_error(message: str) -> JudgeProviderError:
    """The error of a call that was not made because the judge has no API key."""
    return JudgeProviderError(message, code="MISSING_API_KEY", category="USER", retryable=False)


def classify_provider_error(
    error: BaseException,
    *,
    model: str,
    key_hint: str | None = None,
    address: str | None = None,
) -> JudgeError:
    """The `JudgeError` for a failed provider call. Raise it `from error`.

    `key_hint` names where the key comes from (`OPENAI_API_KEY`, `the api_key option`): a
    rejected key (401/403) says to check it. `address` is the URL called (no credentials): a
    connection that could not be made or was dropped names it.
    """
    kind, status = _kind(error)
    headers = _headers(error) if status is not None else {}
    retry_after = parse_retry_after(headers) if kind.retryable else None
    suffix = f" (HTTP {status})" if status is not None else ""
    message = f"judge provider for model {model!r} {kind.what}{suffix}"
    if kind is _CONNECTION and address:
        message += f" at {address}"
    if retry_after is not None:
        message += f"; retry after {retry_after:g}s"
    if key_hint and status in _CREDENTIAL_STATUSES:
        message += f"; check {key_hint}"
    arguments: dict[str, Any] = {
        "code": kind.code,
        "category": kind.category,
        "status_code": status,
        "request_id": _request_id(error, headers),
        "retryable": kind.retryable,
        "retry_after": retry_after,
    }
    if kind.code == "TIMEOUT":
        return JudgeTimeoutError(message, **arguments)
    return JudgeProviderError(message, **arguments)
