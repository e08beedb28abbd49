"""Error answers: one JSON shape (`ErrorBody`) for every refusal, never echoing content."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..config.file import key_path

__all__ = ["ApiError", "error_body", "error_response", "field_path", "install_error_handlers"]


class ApiError(Exception):
    """Raised by handlers; becomes `status` with an `ErrorBody`.

    A `retry_after` (seconds) goes in the body and, as `Retry-After`, in the headers."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        retry_after = extra.get("retry_after")
        if retry_after is not None:
            headers = {"Retry-After": str(retry_after), **(headers or {})}
        self.headers = headers
        self.extra = extra


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The `ErrorBody` of a refusal: its code, message and the extra fields that are set."""
    body: dict[str, Any] = {"error": code, "message": message}
    body.update({key: value for key, value in extra.items() if value is not None})
    return body


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    return JSONResponse(error_body(code, message, **extra), status_code=status, headers=headers)


def field_path(location: Sequence[int | str]) -> str:
    """`("body", "items", 0, "output")` -> `items[0].output`; query fields -> `query.limit`."""
    parts = list(location)
    if parts and parts[0] == "body":
        parts = parts[1:]
    return key_path(parts, empty="body")


def _problems(error: RequestValidationError) -> list[dict[str, str]]:
    problems: list[dict[str, str]] = []
    for item in error.errors():
        location = list(item.get("loc", ()))
        kind = item.get("type")
        message = str(item.get("msg", "invalid"))
        if kind == "json_invalid":
            location = ["body"]
            message = f"invalid JSON: {item.get('ctx', {}).get('error', message)}"
        elif kind == "extra_forbidden":
            message = "unknown field"
        elif kind == "missing":
            message = "required field is missing"
        problems.append({"field": field_path(location), "message": message})
    return problems


async def _on_validation_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    problems = _problems(error)
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
    if len(problems) > 5:
        summary += f"; and {len(problems) - 5} more"
    return error_response(422, "invalid_request", summary, fields=problems)


async def _on_api_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ApiError)
    return error_response(
        error.status, error.code, error.message, headers=error.headers, **error.extra
    )


_HTTP_CODES = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}


async def _on_http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == 400 and error.__cause__ is not None:
        # FastAPI's answer to a body its JSON parser raised on (other than a syntax error):
        # the guard refuses invalid UTF-8 and deep nesting first, this covers the rest.
        problem = f"invalid JSON: {type(error.__cause__).__name__}"
        return error_response(
            422,
            "invalid_request",
            f"body: {problem}",
            fields=[{"field": "body", "message": problem}],
        )
    code = _HTTP_CODES.get(error.status_code, "http_error")
    return error_response(
        error.status_code, code, str(error.detail), headers=dict(error.headers or {}) or None
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
