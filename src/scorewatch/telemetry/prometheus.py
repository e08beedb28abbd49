"""The Prometheus side: the scrape endpoint as an HTTP server of its own or as an ASGI app.

The metrics come from the OpenTelemetry SDK through `opentelemetry-exporter-prometheus` into a
prometheus-client registry; both endpoints answer with `exposition.render` (format, gzip and
`name[]` negotiated as prometheus-client does). The reader adds exemplars, which that exporter
drops: the SDK samples one measurement per histogram bucket made inside a sampled span (the
run's), and the score and judge-call duration buckets carry its `trace_id`/`span_id` in
OpenMetrics, so a dashboard can jump from a bucket to the traces behind it.
"""

from __future__ import annotations

import bisect
import dataclasses
import socket
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Exemplar

from .._asgi import ASGIApp, Receive, Scope, Send
from . import names
from .exposition import render, render_kind
from .names import DEFAULT_PROMETHEUS_ADDRESS
from .scrape_cache import SharedRenders

__all__ = [
    "EXEMPLAR_METRICS",
    "PrometheusServer",
    "default_registry",
    "parse_address",
    "prometheus_asgi_app",
    "prometheus_metric_reader",
    "set_default_registry",
]

# OpenTelemetry histogram -> its Prometheus family: the ones whose buckets carry exemplars.
EXEMPLAR_METRICS: dict[str, str] = {
    names.METRIC_SCORE: names.PROM_SCORE,
    names.METRIC_OPERATION_DURATION: names.PROM_OPERATION_DURATION,
}


def _label_name(key: str) -> str:
    # What the OpenTelemetry exporter does to our attribute keys (letters, digits, dots).
    return "".join(c if c.isalnum() or c == "_" else "_" for c in key)


class _Exemplars:
    """The latest exemplar of every bucket of the chosen histograms.

    The SDK hands each exemplar out once (its reservoirs reset at every collection), while
    Prometheus expects a bucket to keep showing its exemplar until a newer one replaces it, as
    prometheus-client's own histograms do. Bounded by the number of buckets.
    """

    def __init__(self, families: dict[str, str]) -> None:
        self._families = families
        self._latest: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Exemplar]] = {}
        self._lock = threading.Lock()

    def add(self, data: MetricsData) -> None:
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    family = self._families.get(metric.name)
                    if family is None:
                        continue
                    for point in getattr(metric.data, "data_points", ()):
                        if isinstance(point, HistogramDataPoint) and point.exemplars:
                            self._add_point(family, point)

    def _add_point(self, family: str, point: HistogramDataPoint) -> None:
        # Without the empty ones: the exporter gives every series of a family every label
        # any of its series has, "" where it has none, and `decorate` drops those.
        labels = tuple(
            sorted(
                (_label_name(k), str(v))
                for k, v in (point.attributes or {}).items()
                if str(v) != ""
            )
        )
        bounds = list(point.explicit_bounds)
        with self._lock:
            buckets = self._latest.setdefault((family, labels), {})
            for exemplar in point.exemplars:
                if not exemplar.trace_id or not exemplar.span_id:
                    continue
                index = bisect.bisect_left(bounds, exemplar.value)
                le = f"{bounds[index]}" if index < len(bounds) else "+Inf"
                buckets[le] = Exemplar(
                    {
                        "trace_id": format(exemplar.trace_id, "032x"),
                        "span_id": format(exemplar.span_id, "016x"),
                    },
                    exemplar.value,
                    exemplar.time_unix_nano / 1e9,
                )

    def decorate(self, family: Metric) -> Metric:
        if family.type != "histogram" or family.name not in self._families.values():
            return family
        with self._lock:
            samples = []
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    labels = tuple(
                        sorted((k, v) for k, v in sample.labels.items() if k != "le" and v != "")
                    )
                    exemplar = self._latest.get((family.name, labels), {}).get(
                        sample.labels.get("le", "")
                    )
                    if exemplar is not None:
                        sample = sample._replace(exemplar=exemplar)
                samples.append(sample)
        family.samples = samples
        return family


class _WithExemplars:
    """The exporter's collector, its histogram buckets given their exemplars."""

    def __init__(self, inner: Any, exemplars: _Exemplars) -> None:
        self._inner = inner
        self._exemplars = exemplars

    def describe(self) -> list[Metric]:
        # Registering must not collect (the reader has no MeterProvider yet).
        return []

    def collect(self) -> Iterable[Metric]:
        for family in self._inner.collect():
            yield self._exemplars.decorate(family)


def _one_metric_per_name(data: MetricsData) -> MetricsData:
    """`data` with the metrics of one name joined into one, across a resource's scopes.

    The exporter makes one Prometheus family per name and fixes its label names from the first
    metric of that name it meets; the data points of a second metric of the same name (a score
    histogram of another scale lives on a meter of its own) are then written under those label
    names, whatever their own are. Joined, the exporter sees every label of the family and fills
    the missing ones with "" as it does within one metric. Metrics of one name but of different
    kinds are left as they are (Prometheus could not hold them in one family anyway).
    """
    resources = []
    changed = False
    for resource_metrics in data.resource_metrics:
        first: dict[str, tuple[int, int]] = {}
        scopes: list[list[Any]] = []
        for scope_index, scope_metrics in enumerate(resource_metrics.scope_metrics):
            kept: list[Any] = []
            scopes.append(kept)
            for metric in scope_metrics.metrics:
                where = first.get(metric.name)
                if where is not None:
                    earlier = scopes[where[0]][where[1]]
                    series: Any = earlier.data
                    same_kind = type(series) is type(metric.data)
                    if same_kind:
                        points = [*series.data_points, *metric.data.data_points]
                        joined = dataclasses.replace(series, data_points=points)
                        scopes[where[0]][where[1]] = dataclasses.replace(earlier, data=joined)
                        changed = True
                        continue
                else:
                    first[metric.name] = (scope_index, len(kept))
                kept.append(metric)
        resources.append(
            ResourceMetrics(
                resource=resource_metrics.resource,
                scope_metrics=[
                    ScopeMetrics(scope=sm.scope, metrics=metrics, schema_url=sm.schema_url)
                    for sm, metrics in zip(resource_metrics.scope_metrics, scopes, strict=True)
                    if metrics
                ],
                schema_url=resource_metrics.schema_url,
            )
        )
    return MetricsData(resource_metrics=resources) if changed else data


class _ExemplarReader(PrometheusMetricReader):
    # The streams whose exemplars `_Exemplars` keeps (`bound.EXEMPLAR_STREAMS`): a bound
    # histogram offers no other stream's measurements to this reader's exemplar reservoirs.
    exemplar_streams = frozenset(EXEMPLAR_METRICS)

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry=registry, scope_info_enabled=False)
        self._exemplars = _Exemplars(EXEMPLAR_METRICS)
        self._scorewatch_registry = registry
        self._wrapped: _WithExemplars | None = None
        inner = getattr(self, "_collector", None)
        if inner is not None and callable(getattr(inner, "collect", None)):
            # A private attribute of the exporter; without it we serve no exemplars.
            registry.unregister(inner)
            self._wrapped = _WithExemplars(inner, self._exemplars)
            registry.register(self._wrapped)

    def _receive_metrics(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> None:
        if metrics_data is not None:
            self._exemplars.add(metrics_data)
            metrics_data = _one_metric_per_name(metrics_data)
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        if self._wrapped is None:
            super().shutdown(timeout_millis, **kwargs)
            return
        self._scorewatch_registry.unregister(self._wrapped)


def prometheus_metric_reader(registry: CollectorRegistry) -> PrometheusMetricReader:
    """A MetricReader exporting into `registry`, with exemplars on the score and judge-duration
    histogram buckets."""
    return _ExemplarReader(registry)


_default_registry: CollectorRegistry | None = None


def set_default_registry(registry: CollectorRegistry | None) -> None:
    """The registry `configure` exports into; `prometheus_asgi_app()` serves it once set."""
    global _default_registry
    _default_registry = registry


def default_registry() -> CollectorRegistry | None:
    return _default_registry


async def _drain(receive: Receive) -> None:
    while True:
        message = await receive()
        if message.get("type") != "http.request" or not message.get("more_body", False):
            return


def prometheus_asgi_app(
    registry: CollectorRegistry | None = None, *, max_age: float = 0.0
) -> ASGIApp:
    """An ASGI app answering Prometheus scrapes, to mount at `/metrics` in an existing server.

    Without an explicit registry the app serves, at each request, the registry of the active
    `configure()` handle, or prometheus-client's global registry when nothing is configured; so
    it can be mounted before telemetry is configured. Renderings run in a worker thread, one
    at a time; concurrent scrapes of the same kind share one, and with `max_age` (seconds)
    scrapes reuse a rendering that recent (`scrape_cache.SharedRenders`), so any number of
    scrapers cost one rendering per `max_age`.
    """
    renders: SharedRenders[tuple[bytes, Any]] = SharedRenders(max_age)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            return
        await _drain(receive)
        if scope.get("method", "GET") not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", "text/plain; charset=utf-8")
            return
        chosen = registry or _default_registry or REGISTRY
        request_headers = {
            bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1")
            for k, v in scope.get("headers") or ()
        }
        query = parse_qs(bytes(scope.get("query_string") or b"").decode("latin-1"))
        accept = request_headers.get("accept")
        encoding = request_headers.get("accept-encoding")
        wanted = query.get("name[]")
        key = (id(chosen), render_kind(accept, encoding, wanted))
        # Collecting is CPU work of tens of milliseconds at 10,000 series: off the event loop.
        body, headers = await renders.get(key, lambda: render(chosen, accept, encoding, wanted))
        if scope.get("method") == "HEAD":
            body = b""
        await _respond(send, 200, body, headers)

    return app


async def _respond(
    send: Send, status: int, body: bytes, headers: str | list[tuple[str, str]]
) -> None:
    pairs = [("Content-Type", headers)] if isinstance(headers, str) else headers
    raw = [(k.lower().encode(), v.encode()) for k, v in pairs]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def parse_address(address: str | None) -> tuple[str, int]:
    """`"host:port"` (IPv6 as `"[::1]:9464"`) to `(host, port)`; port 0 picks a free port."""
    text = address or DEFAULT_PROMETHEUS_ADDRESS
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port for the Prometheus endpoint, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


class _ScrapeServer(ThreadingHTTPServer):
    daemon_threads = True
    registry: CollectorRegistry


class _ScrapeHandler(BaseHTTPRequestHandler):
    server: _ScrapeServer

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path not in ("/metrics", "/"):
            self.send_error(404)
            return
        body, headers = render(
            self.server.registry,
            self.headers.get("Accept"),
            self.headers.get("Accept-Encoding"),
            parse_qs(url.query).get("name[]"),
        )
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        # Prometheus scrapes every few seconds: an access log line each time is noise.
        return


class PrometheusServer:
    """A threaded HTTP server answering scrapes at `/metrics` on one address, stoppable."""

    def __init__(self, address: str | None, registry: CollectorRegistry) -> None:
        host, port = parse_address(address)
        server_class = type(
            "_ScrapeServerForFamily",
            (_ScrapeServer,),
            {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET},
        )
        self._server: _ScrapeServer = server_class((host, port), _ScrapeHandler)
        self._server.registry = registry
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scorewatch-prometheus", daemon=True
        )
        self._thread.start()
        self.host = host
        self.port = int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
