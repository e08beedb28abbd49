"""The fast encoders write exactly what prometheus-client writes; the endpoint negotiates format,
gzip and `name[]` as prometheus-client's handlers do, with exemplars in OpenMetrics."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.registry import Collector

from scorewatch import telemetry
from scorewatch.telemetry.exposition import render_openmetrics, render_text
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import prompt_scorer, verdicts

pytestmark = pytest.mark.integration


async def test_same_bytes_as_generate_latest_on_scorewatch_metrics() -> None:
    handle = telemetry.configure(prometheus="127.0.0.1:0", otlp=False, set_global=False)
    try:
        # Label values that need escaping.
        for target in ('quote " agent', "back\\slash", "new\nline", "plain"):
            judge = ScriptedJudge([verdicts(2), "ok"])
            await prompt_scorer(judge).run(output="x", target=target)
        assert handle.registry is not None
        expected = generate_latest(handle.registry)
        assert b'scorewatch_target="quote \\" agent"' in expected
        assert render_text(handle.registry) == expected
    finally:
        handle.shutdown()


def test_same_bytes_for_every_prometheus_client_type() -> None:
    registry = CollectorRegistry()
    Counter("requests", "Requests.\nTwo lines", ["path"], registry=registry).labels("/a").inc(3)
    Gauge("temperature", "With \\ backslash", registry=registry).set(float("inf"))
    Gauge("nothing", "NaN value", registry=registry).set(float("nan"))
    Histogram("latency_seconds", "h", buckets=(0.1, 1e7), registry=registry).observe(12345678.0)
    Info("build", "Build info", registry=registry).info({"version": "1.2"})
    assert render_text(registry) == generate_latest(registry)


class _DottedNames(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("dotted.name", "not a legacy name", value=1.0)


def test_names_outside_the_legacy_charset_fall_back_to_prometheus_client() -> None:
    registry = CollectorRegistry()
    registry.register(_DottedNames())
    assert render_text(registry) == generate_latest(registry)


# -- OpenMetrics, exemplars, gzip and name[] -------------------------------------------------

OPENMETRICS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)  # what Prometheus 2.x sends


def test_same_openmetrics_bytes_for_every_prometheus_client_type_with_exemplars() -> None:
    registry = CollectorRegistry()
    counter = Counter("requests", 'Requests "quoted".\nTwo lines', ["path"], registry=registry)
    counter.labels("/a").inc(3, exemplar={"trace_id": "abc"})
    Gauge("temperature", "With \\ backslash", registry=registry).set(float("inf"))
    histogram = Histogram("latency_seconds", "h", buckets=(0.1, 1e7), registry=registry)
    histogram.observe(0.05, exemplar={"trace_id": "0af7651916cd43dd8448eb211c80319c"})
    histogram.observe(12345678.0)
    Info("build", "Build info", registry=registry).info({"version": "1.2"})
    expected = openmetrics_latest(registry)
    assert b"# {trace_id=" in expected
    assert render_openmetrics(registry) == expected


def test_names_outside_the_legacy_charset_fall_back_for_openmetrics_too() -> None:
    registry = CollectorRegistry()
    registry.register(_DottedNames())
    assert render_openmetrics(registry) == openmetrics_latest(registry)


def _get(url: str, **headers: str) -> httpx.Response:
    # httpx asks for gzip by default; a bare scrape does not.
    return httpx.get(url, headers={"Accept-Encoding": "identity", **headers}, timeout=10)


async def test_the_endpoint_negotiates_like_prometheus_client() -> None:
    handle = telemetry.configure(prometheus="127.0.0.1:0", otlp=False, set_global=False)
    try:
        judge = ScriptedJudge([verdicts(2), "ok"])
        result = await prompt_scorer(judge).run(output="x", target="agent")
        url = handle.prometheus_url
        assert url is not None and handle.registry is not None

        plain = _get(url)
        assert plain.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert "content-encoding" not in plain.headers
        assert b" # {" not in plain.content  # no exemplars in the 0.0.4 format

        scraped = _get(url, Accept=OPENMETRICS_ACCEPT, **{"Accept-Encoding": "gzip"})
        assert scraped.headers["content-type"].startswith(
            "application/openmetrics-text; version=1.0.0"
        )
        assert scraped.headers["content-encoding"] == "gzip"
        body = scraped.content  # httpx undoes the gzip
        assert body.endswith(b"# EOF\n")
        # The score bucket holding the run's score and the judge-call duration carry exemplars
        # pointing at the run's trace.
        trace = f'trace_id="{result.score_trace_id}"'.encode()
        score_lines = [
            line
            for line in body.splitlines()
            if line.startswith(b"scorewatch_evaluation_score_bucket")
        ]
        assert [line for line in score_lines if b'le="0.5"' in line and trace in line]
        duration_lines = [
            line
            for line in body.splitlines()
            if line.startswith(b"gen_ai_client_operation_duration_seconds_bucket") and trace in line
        ]
        assert duration_lines
        # Exemplars stay on their buckets scrape after scrape (the SDK hands each out once),
        # and the bytes are those of prometheus-client's own OpenMetrics encoder.
        again = render_openmetrics(handle.registry)
        assert again.count(trace) >= 2
        assert again == openmetrics_latest(handle.registry)

        only = _get(f"{url}?name[]=scorewatch_scorer_runs_total&name[]=scorewatch_live_in_flight")
        names_seen = {
            line.split(b"{")[0].split(b" ")[0]
            for line in only.content.splitlines()
            if line and not line.startswith(b"#")
        }
        assert names_seen == {b"scorewatch_scorer_runs_total"} or names_seen == {
            b"scorewatch_scorer_runs_total",
            b"scorewatch_live_in_flight",
        }
    finally:
        handle.shutdown()
