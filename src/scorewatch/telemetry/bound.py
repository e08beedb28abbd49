"""`BoundHistogram`: one series of an SDK histogram, recorded straight into the SDK's own
aggregation of its attribute set.

The OpenTelemetry Python SDK has no bound instruments. Every `Histogram.record` cleans its
attributes into a new dict, copies and hashes them (sorted, recursively), looks the instrument's
view matches up and only then aggregates (buckets, sum, count, min and max under the
aggregation's lock) and offers the value to the exemplar reservoir: ~11 µs, of which the
aggregation and the exemplar take ~3. A scored run records six measurements whose attribute sets
are fixed per scorer (a step's, an outcome's, a score's). A `BoundHistogram` finds, once, the
aggregations its set lands in (one per reader and view), and each `record` then does what the
SDK does after the lookup: it builds the measurement (value, time, instrument, current context,
the cleaned attributes), asks the provider's exemplar filter, and calls those aggregations'
`aggregate`. The same code on the same state, so buckets, sums, counts, min/max and exemplars
are the SDK's (`tests/telemetry/test_telemetry_bound.py` compares both, OTLP and Prometheus).

What the SDK keeps private is read here only, and only where it has the shape this was written
against: anywhere else `record` is `Histogram.record`, unchanged. That is another meter provider,
an aggregation that starts afresh at every collection (delta temporality), a value the SDK warns
about (negative, not finite), a disabled meter, and a first measurement: the bound series finds
its aggregations after the SDK's own `record` made them, and never makes one itself. Readers
added or removed later are noticed (the SDK replaces its table of them) and the series is bound
again.

Exemplars are offered only where they can be exported. A reader that says which metric streams'
exemplars it exports (`exemplar_streams`, as the Prometheus reader of `prometheus.py` does: the
score's and the judge-call duration's) has its other streams' aggregations fed without the
exemplar filter and reservoir: the SDK would keep an exemplar there that the reader drops at
every collection. Every other reader's aggregations get the filter's decision, as the SDK gives
it. The exported output is the same (`test_telemetry_bound.py` compares it with two readers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from time import time_ns
from typing import Any

from opentelemetry.attributes import _clean_attribute_value
from opentelemetry.context import Context, get_current
from opentelemetry.metrics import Histogram

__all__ = ["EXEMPLAR_STREAMS", "BoundHistogram", "sdk_shaped"]

EXEMPLAR_STREAMS = "exemplar_streams"
"""The attribute a metric reader may set to the names of the metric streams whose exemplars it
exports (a collection of str); without it, a reader exports every stream's exemplars."""

try:  # The SDK's internals this reads; absent or moved, nothing is bound.
    from opentelemetry.sdk.metrics._internal._view_instrument_match import (
        _OVERFLOW_KEY,
        _hash_attributes,
    )
    from opentelemetry.sdk.metrics._internal.instrument import Histogram as _Sdk

    _SDK_HISTOGRAM: type | None = _Sdk
except ImportError:  # pragma: no cover - an SDK of another shape
    _SDK_HISTOGRAM = None

_INF = math.inf
_UNREAD = Context()


def sdk_shaped() -> bool:
    """Whether the installed SDK has the internals a `BoundHistogram` binds to."""
    return _SDK_HISTOGRAM is not None


class _Measurement:
    """The SDK's `Measurement` as its aggregations and exemplar reservoirs read it, without the
    cleaning of its attributes in `__post_init__` (a bound series cleaned them once)."""

    __slots__ = ("attributes", "context", "instrument", "time_unix_nano", "value")

    def __init__(
        self,
        value: float,
        time_unix_nano: int,
        instrument: Histogram,
        context: Context,
        attributes: Mapping[str, Any],
    ) -> None:
        self.value = value
        self.time_unix_nano = time_unix_nano
        self.instrument = instrument
        self.context = context
        self.attributes = attributes


class BoundHistogram:
    """`histogram.record(value, attributes)` for one fixed `attributes`, the SDK's lookups done
    once. Thread-safe as the SDK is: each aggregation takes its own lock."""

    __slots__ = (
        "_aggregations",
        "_attributes",
        "_config",
        "_consumer",
        "_filter",
        "_histogram",
        "_plain",
        "_sampled",
        "_storages",
    )

    def __init__(self, histogram: Histogram, attributes: Mapping[str, Any]) -> None:
        self._histogram = histogram
        # Cleaned as the SDK's `Measurement` cleans them, once; never mutated afterwards.
        self._attributes: Mapping[str, Any] = _clean_attribute_value(attributes, None)
        # Unbound (None) until the first `record`; () where the series cannot be bound.
        self._aggregations: Sequence[Any] | None = None
        consumer = getattr(histogram, "_measurement_consumer", None)
        shaped = (
            _SDK_HISTOGRAM is not None
            and isinstance(histogram, _SDK_HISTOGRAM)
            and hasattr(histogram, "_is_enabled")
            and hasattr(histogram, "_meter_config")
            and hasattr(consumer, "_reader_storages")
        )
        self._consumer: Any = consumer if shaped else None
        # What `Histogram._is_enabled` reads: the meter's configuration, updated in place.
        self._config: Any = histogram._meter_config if shaped else None  # type: ignore[attr-defined]
        if self._consumer is None:
            self._aggregations = ()
        self._storages: object = None
        self._filter: Any = None
        # `_aggregations` split: those offered exemplars, and those of readers that export
        # none of this stream's (fed as if the filter had said no).
        self._sampled: Sequence[Any] = ()
        self._plain: Sequence[Any] = ()

    @property
    def attributes(self) -> Mapping[str, Any]:
        return self._attributes

    @property
    def bound(self) -> bool:
        """Whether the next `record` goes straight to the aggregations (for tests)."""
        return bool(self._aggregations) and self._consumer._reader_storages is self._storages

    def record(self, amount: float) -> None:
        aggregations = self._aggregations
        config = self._config
        if (
            aggregations
            and self._consumer._reader_storages is self._storages
            and 0.0 <= amount < _INF
            and (config is None or config.is_enabled)  # `Histogram._is_enabled`, inlined
        ):
            # `Histogram.record` and `SynchronousMeasurementConsumer.consume_measurement`,
            # after their checks and lookups.
            sampled = self._sampled
            if sampled:
                now = time_ns()
                attributes = self._attributes
                context = get_current()
                measurement = _Measurement(amount, now, self._histogram, context, attributes)
                sample = self._filter.should_sample(amount, now, attributes, context)
                for aggregation in sampled:
                    aggregation.aggregate(measurement, sample)
                for aggregation in self._plain:
                    aggregation.aggregate(measurement, False)
                return
            # Offered to no reservoir: an aggregation reads only the value (its time and
            # context are the exemplar's), so no clock read and no context lookup.
            measurement = _Measurement(amount, 0, self._histogram, _UNREAD, self._attributes)
            for aggregation in self._plain:
                aggregation.aggregate(measurement, False)
            return
        histogram = self._histogram
        histogram.record(amount, self._attributes)
        consumer = self._consumer
        if (
            consumer is not None
            and (aggregations is None or consumer._reader_storages is not self._storages)
            and 0.0 <= amount < _INF  # what the SDK aggregated, so the aggregations exist
            and histogram._is_enabled()  # type: ignore[attr-defined]
        ):
            self._bind()

    def _bind(self) -> None:
        """Find the aggregations the SDK's `record` has just fed, as its view matches key
        them (`_ViewInstrumentMatch.consume_measurement`); () where one cannot be found."""
        consumer = self._consumer
        storages = consumer._reader_storages
        self._storages, self._aggregations = storages, ()
        sampled: list[Any] = []
        plain: list[Any] = []
        try:
            self._filter = consumer._sdk_config.exemplar_filter
            for reader, storage in storages.items():
                exported = getattr(reader, EXEMPLAR_STREAMS, None)
                for match in storage._get_or_init_view_instrument_match(self._histogram):
                    if match._reset_on_collect:
                        return  # delta: its aggregations are replaced at every collection
                    attributes = dict(self._attributes)
                    keys = match._view._attribute_keys
                    if keys is not None:
                        attributes = {k: v for k, v in attributes.items() if k in keys}
                    with match._lock:
                        table = match._attributes_aggregation
                        aggregation = table.get(_hash_attributes(attributes))
                        if aggregation is None and len(table) >= match._cardinality_limit:
                            aggregation = table.get(_OVERFLOW_KEY)
                    if aggregation is None:
                        # Not keyed as this module expects (or a reader added since the
                        # `record`): the SDK's path stays, until the readers change.
                        return
                    # The stream's name as the view made it: what the reader exports it as.
                    if exported is None or match._name in exported:
                        sampled.append(aggregation)
                    else:
                        plain.append(aggregation)
        except AttributeError:  # pragma: no cover - an SDK of another shape
            return
        self._sampled, self._plain = tuple(sampled), tuple(plain)
        self._aggregations = (*self._sampled, *self._plain)
