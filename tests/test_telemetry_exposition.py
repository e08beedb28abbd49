"""The fast text encoder writes exactly what prometheus-client's `generate_latest` writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from scorewatch import telemetry
from scorewatch.telemetry.exposition import render_text
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import prompt_scorer, verdicts

pytestmark = pytest.mark.unit


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
