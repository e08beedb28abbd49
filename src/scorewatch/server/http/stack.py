"""Which HTTP parser and event loop serve runs on: h11 + uvloop by default.

The default install brings uvloop and httptools (uvicorn's `[standard]` extras). serve's
connection bounds (how many connections, how long a request's head may take, refusing overload
before parsing: connections.py) are built on uvicorn's h11 protocol, so "auto" keeps the h11
parser and takes uvloop when it is installed. `[server] http = "httptools"` chooses the faster
parser without those bounds, for a service behind a proxy that bounds connections itself;
`"h11"` is the plain stack, h11 + asyncio.
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
    """The stack for `[server] http`: "auto" is h11 with uvloop when installed.

    Asking for "httptools" when it is not installed raises `ConfigError` naming it."""
    if http == "h11":
        return Stack("h11", "asyncio")
    if http == "httptools" and not _installed("httptools"):
        raise ConfigError(
            "server.http: 'httptools' is not installed (pip install httptools uvloop, "
            "or http = 'h11')"
        )
    loop: Literal["uvloop", "asyncio"] = "uvloop" if _installed("uvloop") else "asyncio"
    # "auto" keeps the h11 parser: serve's connection bounds are built on it (connections.py).
    return Stack("httptools" if http == "httptools" else "h11", loop)
