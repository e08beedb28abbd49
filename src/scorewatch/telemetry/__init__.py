"""scorewatch.telemetry: OpenTelemetry spans, metrics and events for scorer runs, and Prometheus.

    from scorewatch import telemetry
    telemetry.instrument()                 # an app that already set up OpenTelemetry
    handle = telemetry.configure()         # or: SDK providers + Prometheus + OTLP in one call
    ...
    handle.shutdown()

How it hooks in. The scorer core never imports the OpenTelemetry SDK: it reports each run as
events on a bus, `scorewatch.core.events.Observers` (run started/finished/failed, step
started/finished, judge attempt started/finished). `instrument()` subscribes a `TelemetryObserver`
to the default bus (or the one given) that turns those events into a span
tree (`evaluation {scorer_id}` > `evaluation.step {step}` > CLIENT `chat {model}` per attempt,
made current during the call), the metrics of docs/telemetry.md, and one
`gen_ai.evaluation.result` log event per run. The judge record stays the source of truth; token
and cost figures are derived from it and add up to it exactly.

Live scoring and the work queue. Live code and the server sit above core and never import
telemetry either: they emit to the same bus (sampling decisions, in-flight runs, sink errors,
redeliveries, dead letters), which costs one tuple check when nobody listens, and register their
queue depth and stream readings there as pulled sources; the `scorewatch.live.queue.depth` and
work-queue gauges read those at collection time. A run scored for a queued request carries the
request's span as a trace link of its `RunStart`, which becomes a link of the run span.

All names, units and bucket lists live in `scorewatch.telemetry.names`.
"""

from __future__ import annotations

from . import names
from .cardinality import CardinalityGuard
from .content import CaptureContent, ContentCapture, resolve_capture
from .exporters import ExportPlan, export_plan, exports_requested
from .instruments import metric_views
from .prometheus import prometheus_asgi_app
from .setup import (
    OtlpProtocol,
    TelemetryHandle,
    configure,
    existing_providers,
    instrument,
    is_instrumented,
    tracer_for,
    uninstrument,
)

__all__ = [
    "CaptureContent",
    "CardinalityGuard",
    "ContentCapture",
    "ExportPlan",
    "OtlpProtocol",
    "TelemetryHandle",
    "configure",
    "existing_providers",
    "export_plan",
    "exports_requested",
    "instrument",
    "is_instrumented",
    "metric_views",
    "names",
    "prometheus_asgi_app",
    "resolve_capture",
    "tracer_for",
    "uninstrument",
]
