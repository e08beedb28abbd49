"""Which exporters `configure` builds: `OTEL_{TRACES,METRICS,LOGS}_EXPORTER` and OTLP settings.

The standard variables name a comma list per signal: `otlp`, `console`, `none` (and, for
metrics, `prometheus`, which the pull endpoint of `configure(prometheus=...)` already is). An
unset variable keeps scorewatch's default: OTLP only when an `OTEL_EXPORTER_OTLP_*ENDPOINT` is
set, since a collector that is not there would only produce connection errors. The programmatic
`otlp` argument wins over the environment: False never exports over OTLP, True or a URL always.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Literal

from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.trace.export import SpanExporter

__all__ = [
    "EXPORTER_CONSOLE",
    "EXPORTER_OTLP",
    "ExportPlan",
    "OtlpProtocol",
    "export_plan",
    "exports_requested",
    "log_exporter",
    "metric_exporter",
    "span_exporter",
]

logger = logging.getLogger("scorewatch.telemetry")

OtlpProtocol = Literal["grpc", "http/protobuf"]
Signal = Literal["TRACES", "METRICS", "LOGS"]
SIGNALS: tuple[Signal, ...] = ("TRACES", "METRICS", "LOGS")
EXPORTER_OTLP = "otlp"
EXPORTER_CONSOLE = "console"
_PULL_ONLY = {"METRICS": "prometheus"}  # served by configure(prometheus=...), nothing to push


@dataclass(frozen=True, slots=True)
class ExportPlan:
    """The push exporters of each signal, e.g. `traces=("otlp", "console")`."""

    traces: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()

    def of(self, signal: Signal) -> tuple[str, ...]:
        return {"TRACES": self.traces, "METRICS": self.metrics, "LOGS": self.logs}[signal]

    @property
    def any(self) -> bool:
        return bool(self.traces or self.metrics or self.logs)


def _otlp_endpoint_set() -> bool:
    keys = ["OTEL_EXPORTER_OTLP_ENDPOINT"] + [f"OTEL_EXPORTER_OTLP_{s}_ENDPOINT" for s in SIGNALS]
    return any(os.environ.get(key) for key in keys)


def _from_env(signal: Signal) -> tuple[str, ...] | None:
    raw = os.environ.get(f"OTEL_{signal}_EXPORTER")
    if raw is None or not raw.strip():
        return None
    chosen: list[str] = []
    for item in raw.split(","):
        name = item.strip().lower()
        if not name or name in chosen:
            continue
        if name in ("none", EXPORTER_OTLP, EXPORTER_CONSOLE) or name == _PULL_ONLY.get(signal):
            chosen.append(name)
        else:
            logger.warning("OTEL_%s_EXPORTER: exporter %r is not supported; ignored", signal, name)
    if "none" in chosen:
        if len(chosen) > 1:
            logger.warning("OTEL_%s_EXPORTER lists `none` with other exporters: none used", signal)
        return ()
    return tuple(name for name in chosen if name != _PULL_ONLY.get(signal))


def export_plan(otlp: bool | str | None) -> ExportPlan:
    """The push exporters per signal, from `otlp` (wins) and the standard variables."""
    per_signal: dict[Signal, tuple[str, ...]] = {}
    for signal in SIGNALS:
        listed = _from_env(signal)
        if listed is None:
            listed = (EXPORTER_OTLP,) if _otlp_endpoint_set() else ()
        if otlp is False:
            listed = tuple(name for name in listed if name != EXPORTER_OTLP)
        elif otlp is not None and EXPORTER_OTLP not in listed:
            listed = (EXPORTER_OTLP, *listed)
        per_signal[signal] = listed
    return ExportPlan(per_signal["TRACES"], per_signal["METRICS"], per_signal["LOGS"])


def exports_requested() -> bool:
    """Whether the environment asks for any push export (for commands that export only then)."""
    return export_plan(None).any


def _protocol(signal: Signal, explicit: OtlpProtocol | None) -> OtlpProtocol:
    if explicit is not None:
        return explicit
    value = (
        os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if value == "grpc":
        return "grpc"
    if value not in ("http/protobuf", ""):
        logger.warning("OTLP protocol %r is not supported; using http/protobuf", value)
    return "http/protobuf"


def _http_endpoint(base: str | None, path: str) -> str | None:
    return None if base is None else base.rstrip("/") + path


def _insecure(endpoint: str | None) -> bool | None:
    # None lets the exporter read OTEL_EXPORTER_OTLP_*_INSECURE and the endpoint scheme itself.
    return None if endpoint is None else endpoint.startswith("http://")


def span_exporter(
    kind: str, endpoint: str | None, protocol: OtlpProtocol | None, timeout: float | None
) -> SpanExporter:
    if kind == EXPORTER_CONSOLE:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if _protocol("TRACES", protocol) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=endpoint, insecure=_insecure(endpoint), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    return HttpSpanExporter(endpoint=_http_endpoint(endpoint, "/v1/traces"), timeout=timeout)


def metric_exporter(
    kind: str, endpoint: str | None, protocol: OtlpProtocol | None, timeout: float | None
) -> MetricExporter:
    if kind == EXPORTER_CONSOLE:
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter()
    if _protocol("METRICS", protocol) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter(endpoint=endpoint, insecure=_insecure(endpoint), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )

    return HttpMetricExporter(endpoint=_http_endpoint(endpoint, "/v1/metrics"), timeout=timeout)


def log_exporter(
    kind: str, endpoint: str | None, protocol: OtlpProtocol | None, timeout: float | None
) -> LogRecordExporter:
    if kind == EXPORTER_CONSOLE:
        from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter

        return ConsoleLogRecordExporter()
    if _protocol("LOGS", protocol) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        return OTLPLogExporter(endpoint=endpoint, insecure=_insecure(endpoint), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    return HttpLogExporter(endpoint=_http_endpoint(endpoint, "/v1/logs"), timeout=timeout)
