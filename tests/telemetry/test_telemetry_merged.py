"""`MergedRegistry`: several processes' registries as one exposition (serve --workers N)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from scorewatch.telemetry import names
from scorewatch.telemetry.exposition import render, render_openmetrics
from scorewatch.telemetry.merged import MergedRegistry, merge_families

pytestmark = pytest.mark.unit


def _sample(registry: object, name: str, **labels: str) -> float:
    for family in registry.collect():  # type: ignore[attr-defined]
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    raise AssertionError(f"no sample {name}{labels}")


def _process(events: int, depth: int, backlog: int, exemplar_trace: str) -> CollectorRegistry:
    registry = CollectorRegistry()
    counter = Counter("jobs", "Jobs done", ["kind"], registry=registry)
    counter.labels("a").inc(events)
    Gauge("live_queue_depth", "Queued here", registry=registry).set(depth)
    Gauge(names.PROM_QUEUE_BACKLOG, "The shared stream", registry=registry).set(backlog)
    histogram = Histogram("latency", "Latency", buckets=(1.0, 2.0), registry=registry)
    histogram.observe(0.5, exemplar={"trace_id": exemplar_trace})
    return registry


def test_counters_histograms_and_gauges_add_up_shared_gauges_do_not() -> None:
    first, second = _process(2, 3, 10, "aa"), _process(5, 4, 12, "bb")
    merged = MergedRegistry(first, lambda: [openmetrics_latest(second).decode()])
    assert _sample(merged, "jobs_total", kind="a") == 7
    assert _sample(merged, "live_queue_depth") == 7
    # Every process reads the same Redis stream: the largest reading, not twice the backlog.
    assert _sample(merged, names.PROM_QUEUE_BACKLOG) == 12
    assert _sample(merged, "latency_bucket", le="1.0") == 2
    assert _sample(merged, "latency_count") == 2
    assert _sample(merged, "latency_sum") == 1.0


def test_the_latest_exemplar_of_a_bucket_wins_and_survives_openmetrics() -> None:
    first, second = _process(1, 0, 0, "older"), _process(1, 0, 0, "newer")
    merged = MergedRegistry(first, lambda: [openmetrics_latest(second).decode()])
    body = render_openmetrics(merged).decode()
    assert 'latency_bucket{le="1.0"} 2.0 # {trace_id="newer"} 0.5' in body
    assert body.endswith("# EOF\n")


def test_the_earliest_created_is_kept() -> None:
    first, second = _process(1, 0, 0, "a"), _process(1, 0, 0, "b")
    created = [_sample(r, "jobs_created", kind="a") for r in (first, second)]
    merged = MergedRegistry(second, lambda: [openmetrics_latest(first).decode()])
    assert _sample(merged, "jobs_created", kind="a") == min(created)


def test_one_process_merged_with_none_renders_as_itself() -> None:
    registry = _process(3, 1, 1, "x")
    merged = MergedRegistry(lambda: registry, lambda: [])
    assert render(merged)[0] == render(registry)[0]
    accept = "application/openmetrics-text"
    assert render(merged, accept)[0] == render(registry, accept)[0]


def test_a_missing_sibling_fails_the_scrape_rather_than_count_less() -> None:
    def unavailable() -> list[str]:
        raise RuntimeError("worker 2 did not answer")

    with pytest.raises(RuntimeError, match="worker 2"):
        MergedRegistry(_process(1, 0, 0, "a"), unavailable).collect()


def test_series_only_one_process_has_are_kept() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    Counter("jobs", "Jobs", ["kind"], registry=first).labels("a").inc()
    Counter("jobs", "Jobs", ["kind"], registry=second).labels("b").inc(2)
    families = merge_families([first.collect(), second.collect()])
    values = {
        s.labels["kind"]: s.value for f in families for s in f.samples if s.name == "jobs_total"
    }
    assert values == {"a": 1, "b": 2}
