"""scorewatch.telemetry: OpenTelemetry spans, metrics and events for scorer runs, and Prometheus.

    from scorewatch import telemetry
    telemetry.instrument()                 # an app that already set up OpenTelemetry
    handle = telemetry.configure()         # or: SDK providers + Prometheus + OTLP in one call
    ...
    handle.shutdown()

How it hooks in. The scorer core never imports the OpenTelemetry SDK: it reports each run
through `scorewatch.core.hooks` (run started/finished/failed, step started/finished, judge attempt
started/finished). `instrument()` registers a `RunObserver` that turns those reports into a span
tree (`evaluation {scorer_id}` > `evaluation.step {step}` > CLIENT `chat {model}` per attempt,
made current during the call), the metrics of telemetry.md §4, and one
`gen_ai.evaluation.result` log event per run. The judge record stays the source of truth; token
and cost figures are derived from it and add up to it exactly.

Live scoring. `scorewatch.live` sits above telemetry in the import order, so it must not import
telemetry. Live code reports through `scorewatch.live.observers` instead (`record_decision`,
`record_in_flight`, `record_sink_error`, `register_queue_depth`), which costs one tuple check when
nobody listens; `instrument()` registers `LiveMetrics` there as a `LiveObserver`, and the
`scorewatch.live.queue.depth` gauge sums the registered depth sources at collection time. Code
below telemetry (the server) may also call `telemetry.live_metrics()` directly.

All names, units and bucket lists live in `scorewatch.telemetry.names`.
"""

from __future__ import annotations

from . import names
from .cardinality import CardinalityGuard
from .content import CaptureContent, ContentCapture, resolve_capture
from .exporters import ExportPlan, export_plan, exports_requested
from .instruments import metric_views
from .live_metrics import LiveMetrics
from .prometheus import prometheus_asgi_app
from .setup import (
    OtlpProtocol,
    TelemetryHandle,
    configure,
    existing_providers,
    instrument,
    is_instrumented,
    live_metrics,
    uninstrument,
)

__all__ = [
    "CaptureContent",
    "CardinalityGuard",
    "ContentCapture",
    "ExportPlan",
    "LiveMetrics",
    "OtlpProtocol",
    "TelemetryHandle",
    "configure",
    "existing_providers",
    "export_plan",
    "exports_requested",
    "instrument",
    "is_instrumented",
    "live_metrics",
    "metric_views",
    "names",
    "prometheus_asgi_app",
    "resolve_capture",
    "uninstrument",
]
