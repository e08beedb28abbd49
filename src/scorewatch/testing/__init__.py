"""Test helpers: scripted judges, a loopback judge server and a loopback OTLP receiver.

Heavy helpers (the OTLP receiver pulls in grpc) are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .scripted import ScriptedJudge

if TYPE_CHECKING:
    from .judge_server import (
        DropConnection,
        HttpError,
        LoopbackJudgeServer,
        MalformedBody,
        ReceivedJudgeRequest,
        Reply,
    )
    from .otlp_receiver import (
        OtlpReceiver,
        ReceivedLogRecord,
        ReceivedMetricPoint,
        ReceivedRequest,
        ReceivedSpan,
    )

__all__ = [
    "DropConnection",
    "HttpError",
    "LoopbackJudgeServer",
    "MalformedBody",
    "OtlpReceiver",
    "ReceivedJudgeRequest",
    "ReceivedLogRecord",
    "ReceivedMetricPoint",
    "ReceivedRequest",
    "ReceivedSpan",
    "Reply",
    "ScriptedJudge",
]

_LAZY: dict[str, str] = {
    "DropConnection": ".judge_server",
    "HttpError": ".judge_server",
    "LoopbackJudgeServer": ".judge_server",
    "MalformedBody": ".judge_server",
    "ReceivedJudgeRequest": ".judge_server",
    "Reply": ".judge_server",
    "OtlpReceiver": ".otlp_receiver",
    "ReceivedLogRecord": ".otlp_receiver",
    "ReceivedMetricPoint": ".otlp_receiver",
    "ReceivedRequest": ".otlp_receiver",
    "ReceivedSpan": ".otlp_receiver",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module_name, __name__), name)
    globals()[name] = value
    return value
