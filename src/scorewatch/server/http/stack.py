"""Which HTTP parser and event loop serve runs on: httptools + uvloop when installed.

The default install brings both (they are uvicorn's `[standard]` extras); under load they
do the same work as h11 + asyncio in about a seventh of the CPU (BENCHMARKS.md, "The intake
near its floor"). Without them, or with `[server] http = "h11"`, serve runs on the plain
stack: pure Python, slower, the same behaviour.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Literal

from ..config.file import ConfigError

__all__ = ["Stack", "choose_stack"]


@dataclass(frozen=True, slots=True)
class Stack:
    """uvicorn's `http` and `loop` settings."""

    http: Literal["httptools", "h11"]
    loop: Literal["uvloop", "asyncio"]

    @property
    def name(self) -> str:
        return f"{self.http} + {self.loop}"


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def choose_stack(http: Literal["auto", "httptools", "h11"]) -> Stack:
    """The stack for `[server] http`; "auto" takes each fast part that is installed.

    Asking for "httptools" when it is not installed raises `ConfigError` naming it."""
    if http == "h11":
        return Stack("h11", "asyncio")
    if http == "httptools" and not _installed("httptools"):
        raise ConfigError(
            "server.http: 'httptools' is not installed (pip install httptools uvloop, "
            "or http = 'h11')"
        )
    parser: Literal["httptools", "h11"] = "httptools" if _installed("httptools") else "h11"
    loop: Literal["uvloop", "asyncio"] = "uvloop" if _installed("uvloop") else "asyncio"
    return Stack(parser, loop)
