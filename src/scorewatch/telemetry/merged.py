"""One Prometheus exposition for several processes: `MergedRegistry`.

The OpenTelemetry Prometheus exporter has no multiprocess mode (prometheus-client's writes
files and drops exemplars), so a service running N processes merges at scrape time: the
process answering the scrape collects its own registry and takes the others' as OpenMetrics
text (which keeps exemplars and `_created`), and the families are merged by series:

- counters, histograms and summaries: summed (every process counts its own events);
- gauges: summed (queue depths, in-flight runs add up), except the ones that read a state the
  processes share (the Redis work queue's readings: every process sees the same stream), which
  take the largest reading;
- info and stateset families, and `_created`: the first process's (earliest `_created`);
- exemplars: for each bucket, the latest one of any process.

>>> from prometheus_client import CollectorRegistry, Counter
>>> a, b = CollectorRegistry(), CollectorRegistry()
>>> _ = Counter("jobs", "Jobs done", registry=a).inc(2), Counter("jobs", "Jobs", registry=b).inc(3)
>>> from prometheus_client.openmetrics.exposition import generate_latest
>>> merged = MergedRegistry(a, lambda: [generate_latest(b).decode()])
>>> [s.value for f in merged.collect() for s in f.samples if s.name == "jobs_total"]
[5.0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from . import names

__all__ = ["SHARED_GAUGES", "MergedRegistry", "merge_families"]

# Gauges that read one state every process shares: the largest reading, never the sum.
SHARED_GAUGES: frozenset[str] = frozenset(
    {
        names.PROM_QUEUE_BACKLOG,
        names.PROM_QUEUE_PENDING,
        names.PROM_QUEUE_LAG,
        names.PROM_QUEUE_DEAD_LETTERS,
    }
)
_FIRST_KINDS = frozenset({"info", "stateset"})
_SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


def _seconds(timestamp: Any) -> float:
    # A float from a registry, a `Timestamp` from the parser.
    return float(timestamp) if timestamp is not None else 0.0


def _combine(kind: str, family: str, sample_name: str, old: Sample, new: Sample) -> Sample:
    if kind in _FIRST_KINDS:
        return old
    if sample_name.endswith("_created"):
        return old if old.value <= new.value else new
    if kind == "gauge" and family in SHARED_GAUGES:
        return old if old.value >= new.value else new
    exemplar = old.exemplar
    if new.exemplar is not None and (
        exemplar is None or _seconds(new.exemplar.timestamp) > _seconds(exemplar.timestamp)
    ):
        exemplar = new.exemplar
    return old._replace(value=old.value + new.value, exemplar=exemplar)


def merge_families(parts: Sequence[Iterable[Metric]]) -> list[Metric]:
    """The families of several processes' registries, merged series by series."""
    merged: dict[str, Metric] = {}
    series: dict[str, dict[_SeriesKey, Sample]] = {}
    for part in parts:
        for family in part:
            target = merged.get(family.name)
            if target is None:
                target = Metric(family.name, family.documentation, family.type, family.unit)
                merged[family.name] = target
                series[family.name] = {}
            samples = series[family.name]
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                old = samples.get(key)
                samples[key] = (
                    sample
                    if old is None
                    else _combine(target.type, family.name, sample.name, old, sample)
                )
    for name, target in merged.items():
        target.samples = list(series[name].values())
    return list(merged.values())


class MergedRegistry:
    """A collector whose families are `local`'s merged with other processes' expositions.

    `local`: a registry, or a callable returning the registry to read at each scrape (or None);
    `others`: returns the other processes' OpenMetrics texts (raising when one is missing: a
    scrape that silently left a process out would make every counter look reset)."""

    def __init__(self, local: Any, others: Callable[[], list[str]]) -> None:
        self._local = local
        self._others = others

    def collect(self) -> list[Metric]:
        local = self._local() if callable(self._local) else self._local
        texts = self._others()
        parts: list[Iterable[Metric]] = [list(local.collect())] if local is not None else []
        parts.extend(
            list(text_string_to_metric_families(text))  # type: ignore[no-untyped-call]
            for text in texts
        )
        return merge_families(parts)
