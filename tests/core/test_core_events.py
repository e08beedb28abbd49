"""The event bus (`scorewatch.core.events`): isolation of an own `Observers`, no-op bases, failing
observers and gauge sources, trace links on the run start, and the producers that take a bus
(`LiveScoring`, `telemetry.instrument`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

import scorewatch as sw
from core_support import RecordingObserver, observing
from scorewatch import telemetry
from scorewatch.core.events import (
    OBSERVERS,
    Handler,
    Observer,
    Observers,
    RunListener,
    RunStart,
    TraceLink,
    current_observers,
    linked_runs,
    observed_by,
)
from scorewatch.live import CallbackSink, LiveScoring
from scorewatch.live.events import (
    DeadLettered,
    Decided,
    InFlight,
    QueueDepth,
    QueueGauges,
    Redelivered,
)
from scorewatch.sinks.delivery import SinkFailed
from scorewatch.telemetry import names
from telemetry_helpers import InMemoryTelemetry

pytestmark = pytest.mark.unit


def _scorer(scorer_id: str = "s") -> sw.Scorer:
    return sw.create_scorer(id=scorer_id, description="d").generate_score(lambda ctx: 0.5)


@dataclass
class _Events(Observer):
    """Keeps every live and queue event it hears, and the runs started."""

    events: list[tuple[str, Any]] = field(default_factory=list)

    def run_started(self, start: RunStart) -> RunListener | None:
        self.events.append(("run", start.run.score_source))
        return None

    def handlers(self) -> dict[type, Handler]:
        return {Decided: self.decision, InFlight: self.in_flight, SinkFailed: self.sink_error}

    def decision(self, event: Decided) -> None:
        self.events.append(("decision", (event.scorer_id, event.decision)))

    def in_flight(self, event: InFlight) -> None:
        self.events.append(("in_flight", event.delta))

    def sink_error(self, event: SinkFailed) -> None:
        self.events.append(("sink_error", event.sink))

    def named(self, name: str) -> list[Any]:
        return [payload for event, payload in self.events if event == name]


async def test_an_own_bus_hears_only_the_runs_started_while_it_is_current() -> None:
    own, mine = Observers(), RecordingObserver()
    own.add(mine)
    with observing() as default:
        with observed_by(own) as current:
            assert current is own and current_observers() is own
            await _scorer().run(output="inside")
        assert current_observers() is OBSERVERS
        await _scorer().run(output="outside")
    assert [start.run.output for start in mine.starts] == ["inside"]
    assert [start.run.output for start in default.starts] == ["outside"]
    assert mine.only.names() == ["step_started", "step_finished", "run_finished"]


async def test_the_bases_are_no_ops_and_adding_twice_subscribes_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus, quiet = Observers(), Observer()
    bus.add(quiet)
    bus.add(quiet)
    assert bus.subscribers == (quiet,)
    with caplog.at_level(logging.DEBUG, logger="scorewatch.events"), observed_by(bus):
        result = await _scorer().run(output="o")
        bus.emit(Decided("s", "sampled"))
        bus.emit(InFlight(1))
        bus.emit(SinkFailed("sqlite"))
        bus.emit(Redelivered("stream", 2))
        bus.emit(DeadLettered("stream", "failed"))
    assert result.score == 0.5
    assert result.score_trace_id is None  # no listener, so no trace id
    assert caplog.records == []
    listener = RunListener()
    assert listener.trace_id is None
    assert listener.run_failed(RuntimeError("x"), 0.0) is None
    bus.remove(quiet)
    assert bus.subscribers == ()


def test_an_observer_that_raises_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(Observer):
        def handlers(self) -> dict[type, Handler]:
            return {Decided: self.decision}

        def decision(self, event: Decided) -> None:
            raise RuntimeError("broken observer")

    bus, heard = Observers(), _Events()
    bus.add(Broken())
    bus.add(heard)
    with caplog.at_level(logging.WARNING, logger="scorewatch.events"):
        bus.emit(Decided("s", "filtered"))
    assert heard.named("decision") == [("s", "filtered")]
    assert any("failed; ignored" in record.getMessage() for record in caplog.records)


def test_pulled_sources_skip_a_failing_one_and_unregister(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = Observers()

    def broken() -> QueueDepth:
        raise RuntimeError("no depth")

    depth = {"value": 3}
    unregister = bus.register_source(QueueDepth, lambda: QueueDepth(depth["value"]))
    unregister_broken = bus.register_source(QueueDepth, broken)
    bus.register_source(QueueDepth, lambda: QueueDepth(4))
    with caplog.at_level(logging.WARNING, logger="scorewatch.events"):
        assert QueueDepth.total(bus) == 7
    assert any("source" in record.getMessage() for record in caplog.records)
    depth["value"] = 10
    assert QueueDepth.total(bus) == 14
    unregister()
    unregister()  # twice is harmless
    unregister_broken()
    assert QueueDepth.total(bus) == 4
    assert QueueDepth.total(OBSERVERS) == 0  # the default bus never saw these

    reading = QueueGauges("work", backlog=5, pending=2, lag=3, dead_letters=1)
    bus.register_source(QueueGauges, lambda: None)  # no reading yet
    bus.register_source(QueueGauges, lambda: reading)
    bus.register_source(QueueGauges, lambda: reading)  # serve and a worker on one stream
    assert QueueGauges.latest(bus) == [reading]


async def test_linked_runs_ride_on_the_run_start() -> None:
    first = TraceLink.of(1, 2)
    assert first == TraceLink("0" * 31 + "1", "0" * 15 + "2")
    second = TraceLink("a" * 32, "b" * 16)
    with observing() as observer:
        with linked_runs(first, None), linked_runs(second):
            await _scorer().run(output="linked")
        await _scorer().run(output="unlinked")
    assert [start.links for start in observer.starts] == [(first, second), ()]


async def test_live_scoring_reports_to_the_bus_it_was_given() -> None:
    own, heard, default = Observers(), _Events(), _Events()
    own.add(heard)
    OBSERVERS.add(default)

    def refuse(result: Any) -> None:
        raise ValueError("this sink refuses every row")

    try:
        live = LiveScoring(
            {"s": _scorer()},
            sinks=[CallbackSink(refuse, name="refusing")],
            drain_on_exit=False,
            observers=own,
        )
        try:
            assert QueueDepth.total(own) == 0
            assert live.submit(input="i", output="o") == {"s": "sampled"}
            assert await live.drain(10)
            # Its runs in flight are read from its queue on this bus (none left), not told.
            assert QueueDepth.running(own) == 0
        finally:
            await live.aclose(5)
    finally:
        OBSERVERS.remove(default)
    assert heard.named("decision") == [("s", "sampled")]
    assert heard.named("in_flight") == []
    assert heard.named("run") == ["live"]
    assert set(heard.named("sink_error")) == {"refusing"}
    assert default.events == []


async def test_instrument_listens_to_the_bus_it_is_given() -> None:
    sink, own = InMemoryTelemetry(), Observers()
    telemetry.instrument(
        sink.tracer_provider, sink.meter_provider, sink.logger_provider, observers=own
    )
    unregister = own.register_source(QueueDepth, lambda: QueueDepth(6))
    try:
        assert telemetry.is_instrumented(own)
        with observed_by(own):
            result = await _scorer("mine").run(output="o")
        await _scorer("theirs").run(output="o")  # the default bus: not instrumented here
        own.emit(Decided("mine", "sampled"))
        assert result.score_trace_id is not None
        assert [span.name for span in sink.spans()] == [
            "evaluation.step generate_score",
            "evaluation mine",
        ]
        assert sink.point(names.METRIC_LIVE_QUEUE_DEPTH).value == 6
        assert sink.point(names.METRIC_LIVE_DECISIONS).attributes == {
            names.ATTR_EVALUATION_NAME: "mine",
            names.ATTR_DECISION: "sampled",
        }
    finally:
        unregister()
        telemetry.uninstrument(own)
        sink.tracer_provider.shutdown()
        sink.logger_provider.shutdown()
        sink.meter_provider.shutdown()
    assert not telemetry.is_instrumented(own)
    assert own.subscribers == ()


def test_the_bus_names_no_producers_vocabulary() -> None:
    """Producers define their events above core (live scoring, the sinks, the trace intake);
    the bus in core knows none of them."""
    import re
    from pathlib import Path

    from scorewatch.core import events

    words = set(re.findall(r"\w+", Path(events.__file__).read_text(encoding="utf-8")))
    producers = {
        "LiveDecision",
        "LIVE_COUNTS",
        "Decided",
        "InFlight",
        "QueueDepth",
        "QueueGauges",
        "Redelivered",
        "DeadLettered",
        "SinkFailed",
        "TraceCounts",
        "decision",
        "in_flight",
        "sink_error",
        "redelivered",
        "dead_lettered",
        "queue_depth",
        "queue_gauges",
        "trace_counts",
    }
    assert words & producers == set()
