"""Label metrics: the telemetry side of the bus's pulled label readings.

`scorewatch.labels` counts the labels each label intake stored; `scorewatch.judge.agreement`
is the latest agreement of each scorer version with its stored labels, one series per measure
(`labels` is how many labels it counts, so an alert can require a minimum).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from opentelemetry.metrics import Meter, Observation

from ..core.events import Observers
from ..sinks.labels import LabelReadings
from . import names
from .pulled import Source, pulled

__all__ = ["LabelMetrics"]


class LabelMetrics:
    """The label counter and the agreement gauge, read from `source()`'s label readings."""

    def __init__(self, meter: Meter, source: Source) -> None:
        meter.create_observable_counter(
            names.METRIC_LABELS,
            callbacks=[pulled(source, _labels)],
            description="Human labels stored, per scorer",
        )
        meter.create_observable_gauge(
            names.METRIC_JUDGE_AGREEMENT,
            callbacks=[pulled(source, _agreement)],
            description="A scorer version's agreement with its human labels, per measure",
        )
        meter.create_observable_gauge(
            names.METRIC_REVIEW_RUNS,
            callbacks=[pulled(source, _review)],
            description="Runs of a scorer's review sample: marked, labelled, pending",
        )


def _labels(bus: Observers) -> Iterable[Observation]:
    total: Counter[str] = Counter()
    for reading in bus.read(LabelReadings):
        total.update(reading.labels)
    return [
        Observation(count, {names.ATTR_SCORER_ID: scorer})
        for scorer, count in sorted(total.items())
    ]


def _agreement(bus: Observers) -> Iterable[Observation]:
    observed: list[Observation] = []
    for reading in bus.read(LabelReadings):
        for (scorer, version, measure), value in sorted(reading.agreement.items()):
            attributes = {
                names.ATTR_SCORER_ID: scorer,
                names.ATTR_SCORER_VERSION: version,
                names.ATTR_AGREEMENT_MEASURE: measure,
            }
            observed.append(Observation(value, attributes))
    return observed


def _review(bus: Observers) -> Iterable[Observation]:
    return [
        Observation(count, {names.ATTR_SCORER_ID: scorer, names.ATTR_REVIEW_STATE: state})
        for reading in bus.read(LabelReadings)
        for (scorer, state), count in sorted(reading.review.items())
    ]
