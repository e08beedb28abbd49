"""Helpers for your own tests: scripted judges, a loopback judge server, in-memory telemetry.

- `ScriptedJudge`: a `JudgeModel` answering from a script, in process.
- `LoopbackJudgeServer`: a real OpenAI-compatible HTTP server on 127.0.0.1, so the litellm
  judge's real HTTP path runs (with `Reply`, `HttpError`, `DropConnection`, `MalformedBody`).
- `in_memory_telemetry()` / `InMemoryTelemetry`: OpenTelemetry providers that keep spans, metric
  points and evaluation events in memory, instrumented into scorewatch for a block.

Heavy helpers (the server, the OpenTelemetry SDK) are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .scripted import ScriptedJudge

if TYPE_CHECKING:
    from ..telemetry.in_memory import InMemoryTelemetry, MetricPoint, in_memory_telemetry
    from .judge_server import (
        DropConnection,
        HttpError,
        LoopbackJudgeServer,
        MalformedBody,
        ReceivedJudgeRequest,
        Reply,
    )

__all__ = [
    "DropConnection",
    "HttpError",
    "InMemoryTelemetry",
    "LoopbackJudgeServer",
    "MalformedBody",
    "MetricPoint",
    "ReceivedJudgeRequest",
    "Reply",
    "ScriptedJudge",
    "in_memory_telemetry",
]

_LAZY: dict[str, str] = {
    "DropConnection": ".judge_server",
    "HttpError": ".judge_server",
    "LoopbackJudgeServer": ".judge_server",
    "MalformedBody": ".judge_server",
    "ReceivedJudgeRequest": ".judge_server",
    "Reply": ".judge_server",
    "InMemoryTelemetry": "..telemetry.in_memory",
    "MetricPoint": "..telemetry.in_memory",
    "in_memory_telemetry": "..telemetry.in_memory",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module_name, __name__), name)
    globals()[name] = value
    return value
