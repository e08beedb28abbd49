"""The OpenTelemetry metric instruments of docs/telemetry.md, and the Views that fix their buckets.

Bucket boundaries are given twice on purpose: as instrument advisories, which any SDK
MeterProvider honours (so an application's own provider gets the right buckets), and as Views
(`metric_views`), which `configure` installs so the boundaries hold even where advisories are
ignored. The score histogram is the exception: its buckets follow each scorer's `scale`, so each
distinct scale gets its own histogram on a meter of its own (a View would force one bucket list).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Sequence
from typing import cast

from opentelemetry.metrics import (
    CallbackOptions,
    Counter,
    Histogram,
    Meter,
    MeterProvider,
    Observation,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

from .._version import __version__
from ..core.events import Observers
from ..live.events import QueueDepth
from . import names
from .budget_metrics import BudgetMetrics
from .describe import Attributes
from .label_metrics import LabelMetrics
from .queue_metrics import QueueMetrics
from .tally import Tally
from .trace_metrics import TraceMetrics

__all__ = ["Instruments", "metric_views"]


# The histograms whose buckets are fixed: (name, unit, description, bucket boundaries), the
# one table both the advisories and the Views are made from.
_FIXED_HISTOGRAMS: Sequence[tuple[str, str, str, Sequence[float]]] = (
    (
        names.METRIC_TOKEN_USAGE,
        names.UNIT_TOKEN,
        "Tokens used by judge model calls, by token type",
        names.TOKEN_BUCKETS,
    ),
    (
        names.METRIC_OPERATION_DURATION,
        names.UNIT_SECONDS,
        "Duration of judge model calls (one per attempt)",
        names.DURATION_BUCKETS_S,
    ),
    (
        names.METRIC_RUN_DURATION,
        names.UNIT_SECONDS,
        "Duration of scorer runs",
        names.RUN_DURATION_BUCKETS_S,
    ),
    (
        names.METRIC_STEP_DURATION,
        names.UNIT_SECONDS,
        "Duration of scorer steps",
        names.DURATION_BUCKETS_S,
    ),
)


# The counters: (name, unit, description); "" is no unit, as `create_counter` defaults.
_COUNTERS: Sequence[tuple[str, str, str]] = (
    (
        names.METRIC_JUDGE_COST,
        names.UNIT_COST_USD,
        "Judge spend in US dollars, provider-reported or estimated",
    ),
    (
        names.METRIC_JUDGE_EXECUTIONS,
        "",
        "Judge executions (one per prompt step run), by status",
    ),
    (
        names.METRIC_JUDGE_ATTEMPTS,
        "",
        "Judge call attempts, retries and structured-output fallbacks included",
    ),
    (
        names.METRIC_JUDGE_CACHE_LOOKUPS,
        "",
        "Verdict cache lookups of prompt steps, by result (hit or miss)",
    ),
    (
        names.METRIC_JUDGE_CACHE_SAVED,
        names.UNIT_COST_USD,
        "Judge spend in US dollars that reused verdicts saved",
    ),
    (names.METRIC_SINK_ERRORS, "", "Failed writes of results to a sink"),
)


def _decision_attributes(key: Hashable) -> Attributes:
    scorer, decision = cast(tuple[str, str], key)
    return {names.ATTR_EVALUATION_NAME: scorer, names.ATTR_DECISION: decision}


def metric_views() -> list[View]:
    """Views pinning the explicit bucket boundaries of the fixed-bucket histograms."""
    return [
        View(
            instrument_name=instrument,
            meter_name=names.INSTRUMENTATION_SCOPE,
            aggregation=ExplicitBucketHistogramAggregation(boundaries=list(bounds)),
        )
        for instrument, _unit, _description, bounds in _FIXED_HISTOGRAMS
    ]


class Instruments:
    """All instruments of one MeterProvider, created the first time it is instrumented.

    The gauges read the pulled sources of `source`, the bus last instrumented with this
    provider; None (not instrumented) silences them, as instruments cannot be removed from a
    MeterProvider.
    """

    def __init__(self, provider: MeterProvider) -> None:
        self._provider = provider
        self.source: Observers | None = None
        meter = provider.get_meter(names.INSTRUMENTATION_SCOPE, __version__)
        self.meter: Meter = meter
        fixed = {
            name: meter.create_histogram(
                name,
                unit=unit,
                description=description,
                explicit_bucket_boundaries_advisory=list(bounds),
            )
            for name, unit, description, bounds in _FIXED_HISTOGRAMS
        }
        self.token_usage: Histogram = fixed[names.METRIC_TOKEN_USAGE]
        self.operation_duration: Histogram = fixed[names.METRIC_OPERATION_DURATION]
        self.run_duration: Histogram = fixed[names.METRIC_RUN_DURATION]
        self.step_duration: Histogram = fixed[names.METRIC_STEP_DURATION]
        counters = {
            name: meter.create_counter(name, unit=unit, description=description)
            for name, unit, description in _COUNTERS
        }
        self.judge_cost: Counter = counters[names.METRIC_JUDGE_COST]
        self.judge_executions: Counter = counters[names.METRIC_JUDGE_EXECUTIONS]
        self.judge_attempts: Counter = counters[names.METRIC_JUDGE_ATTEMPTS]
        self.judge_cache_lookups: Counter = counters[names.METRIC_JUDGE_CACHE_LOOKUPS]
        self.judge_cache_saved: Counter = counters[names.METRIC_JUDGE_CACHE_SAVED]
        self.sink_errors: Counter = counters[names.METRIC_SINK_ERRORS]
        # Counted once per run or decision: tallied, and read by the SDK when it collects
        # (`tally.py`), instead of an SDK add (attributes hashed, locks, exemplar offered) each.
        self.scorer_runs = Tally()
        """Finished runs; keys: the attributes' items (see `Tally`)."""
        meter.create_observable_counter(
            names.METRIC_SCORER_RUNS,
            callbacks=[self.scorer_runs.observe],
            description="Finished scorer runs, by outcome",
        )
        self.score_squares = Tally()
        """Squared scores, keyed as the score histogram's attributes."""
        meter.create_observable_counter(
            names.METRIC_SCORE_SQUARES,
            callbacks=[self.score_squares.observe],
            unit=names.UNIT_DIMENSIONLESS,
            description="The sum of squared scores, beside the score histogram's sum and count",
        )
        # (scorer id, version) -> the info gauge's attributes, one series per version scored.
        self._scorer_versions: dict[tuple[str, str], dict[str, str]] = {}
        meter.create_observable_gauge(
            names.METRIC_SCORER_INFO,
            callbacks=[self._observe_scorer_versions],
            description="1 for every scorer version this process has scored with",
        )
        # Decisions come by the thousand per second.
        self.decisions = Tally(_decision_attributes)
        """Live decisions; keys: (scorer id, decision)."""
        meter.create_observable_counter(
            names.METRIC_LIVE_DECISIONS,
            callbacks=[self.decisions.observe],
            description="Live-scoring sampling and queueing decisions",
        )
        self.live_in_flight = Tally()
        """Live evaluations running that no queue reports (`InFlight` events: a queue
        worker's), one key, `()`; the engines' are read from their `QueueDepth`."""
        meter.create_observable_up_down_counter(
            names.METRIC_LIVE_IN_FLIGHT,
            callbacks=[self._observe_in_flight],
            description="Live evaluations currently running",
        )
        meter.create_observable_gauge(
            names.METRIC_LIVE_QUEUE_DEPTH,
            callbacks=[self._observe_queue_depth],
            description="Live evaluations waiting in the queue",
        )
        self.queue = QueueMetrics(meter, lambda: self.source)
        self.budgets = BudgetMetrics(meter, lambda: self.source)
        self.traces = TraceMetrics(meter, lambda: self.source)
        self.labels = LabelMetrics(meter, lambda: self.source)
        self._scores: dict[float, Histogram] = {}
        self._scores_lock = threading.Lock()

    def scorer_version_seen(self, attributes: dict[str, str]) -> None:
        """Report `attributes` (scorer id, version, declared version) on the info gauge from now
        on; the caller bounds how many versions there are."""
        key = (
            attributes[names.ATTR_EVALUATION_NAME],
            attributes[names.ATTR_SCORER_VERSION],
        )
        self._scorer_versions.setdefault(key, attributes)

    def _observe_scorer_versions(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(1, attributes) for attributes in list(self._scorer_versions.values())]

    def _observe_in_flight(self, options: CallbackOptions) -> Iterable[Observation]:
        # Reported from the start (0), as one series without attributes.
        running = self.live_in_flight.total(())
        source = self.source
        if source is not None:
            running += QueueDepth.running(source)
        return [Observation(running)]

    def _observe_queue_depth(self, options: CallbackOptions) -> Iterable[Observation]:
        source = self.source
        if source is None:
            return []
        return [Observation(QueueDepth.total(source))]

    def score_histogram(self, scale: float) -> Histogram:
        histogram = self._scores.get(scale)
        if histogram is not None:
            return histogram
        with self._scores_lock:
            histogram = self._scores.get(scale)
            if histogram is None:
                meter = self.meter
                if scale != 1.0:
                    meter = self._provider.get_meter(
                        f"{names.INSTRUMENTATION_SCOPE}.scale_{scale:g}", __version__
                    )
                histogram = meter.create_histogram(
                    names.METRIC_SCORE,
                    unit=names.UNIT_DIMENSIONLESS,
                    description="Scores given by scorers (bucket boundaries follow the scale)",
                    explicit_bucket_boundaries_advisory=list(names.score_buckets(scale)),
                )
                self._scores[scale] = histogram
        return histogram
