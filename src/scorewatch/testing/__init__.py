"""Helpers for your own tests: scripted judges, a loopback judge server, in-memory telemetry.

- `ScriptedJudge`: a `JudgeModel` answering from a script, in process.
- `LoopbackJudgeServer`: a real OpenAI-compatible HTTP server on 127.0.0.1, so the litellm
  judge's real HTTP path runs (with `Reply`, `HttpError`, `DropConnection`, `MalformedBody`,
  `RawResponse`).
- `BatchStandInServer`: a stand-in for OpenAI's Batch API (files, batches, their statuses,
  output and error files) built on the loopback server, for batch-priced scoring.
- `in_memory_telemetry()` / `InMemoryTelemetry`: OpenTelemetry providers that keep spans, metric
  points and evaluation events in memory, instrumented into scorewatch for a block.

Heavy helpers (the server, the OpenTelemetry SDK) are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attribute
from .scripted import ScriptedJudge

if TYPE_CHECKING:
    from ..telemetry.in_memory import InMemoryTelemetry, MetricPoint, in_memory_telemetry
    from .batch_server import BatchStandInServer
    from .judge_server import (
        DropConnection,
        HttpError,
        LoopbackJudgeServer,
        MalformedBody,
        RawResponse,
        ReceivedJudgeRequest,
        Reply,
    )

__all__ = [
    "BatchStandInServer",
    "DropConnection",
    "HttpError",
    "InMemoryTelemetry",
    "LoopbackJudgeServer",
    "MalformedBody",
    "MetricPoint",
    "RawResponse",
    "ReceivedJudgeRequest",
    "Reply",
    "ScriptedJudge",
    "in_memory_telemetry",
]

_LAZY: dict[str, tuple[str, str | None]] = {
    "BatchStandInServer": (".batch_server", "BatchStandInServer"),
    "DropConnection": (".judge_server", "DropConnection"),
    "HttpError": (".judge_server", "HttpError"),
    "LoopbackJudgeServer": (".judge_server", "LoopbackJudgeServer"),
    "MalformedBody": (".judge_server", "MalformedBody"),
    "RawResponse": (".judge_server", "RawResponse"),
    "ReceivedJudgeRequest": (".judge_server", "ReceivedJudgeRequest"),
    "Reply": (".judge_server", "Reply"),
    "InMemoryTelemetry": ("..telemetry.in_memory", "InMemoryTelemetry"),
    "MetricPoint": ("..telemetry.in_memory", "MetricPoint"),
    "in_memory_telemetry": ("..telemetry.in_memory", "in_memory_telemetry"),
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(globals(), _LAZY, name)
