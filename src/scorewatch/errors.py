"""The one error type every layer shares.

`ScorewatchError` mirrors the reference system's `MastraError`: a stable `code` (the reference
calls it `id`), a `domain`, a `category` and JSON-safe `details`. `to_dict()` is the only
serialization; it never carries prompts, raw model output or run results.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["ErrorCategory", "ScorewatchError", "error_to_dict"]

ErrorCategory = Literal["USER", "SYSTEM", "THIRD_PARTY", "UNKNOWN"]


class ScorewatchError(Exception):
    """An error with a stable machine-readable code."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        domain: str = "SCORER",
        category: ErrorCategory = "USER",
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.domain = domain
        self.category = category
        self.details: dict[str, Any] = dict(details or {})

    @property
    def id(self) -> str:
        """The reference system's name for `code`."""
        return self.code

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "message": self.message,
            "domain": self.domain,
            "category": self.category,
            "code": self.code,
            "details": self.details,
        }
        if self.__cause__ is not None:
            data["cause"] = error_to_dict(self.__cause__)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


def error_to_dict(error: BaseException) -> dict[str, Any]:
    """Serialize any exception the way `ScorewatchError.to_dict` does: name, message, code."""
    if isinstance(error, ScorewatchError):
        return error.to_dict()
    data: dict[str, Any] = {"name": type(error).__name__, "message": str(error)}
    code = getattr(error, "code", None)
    if isinstance(code, str):
        data["code"] = code
    if error.__cause__ is not None:
        data["cause"] = error_to_dict(error.__cause__)
    return data
