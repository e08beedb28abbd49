"""Live scoring as telemetry sees it: linked run spans, parented events, live metrics."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from live_support import GatedJudge, answering_judge, judged_scorer
from scorewatch.live import LiveScorerEntry, LiveScoring, Sampling
from scorewatch.telemetry import names
from telemetry_helpers import in_memory_telemetry

pytestmark = pytest.mark.unit


class BrokenSink:
    name = "broken"

    async def write(self, results: Any) -> None:
        raise OSError("disk full")

    async def aclose(self) -> None:
        return None


async def test_watched_calls_link_runs_to_the_agent_span_and_count_decisions() -> None:
    with in_memory_telemetry() as telemetry:
        live = LiveScoring(
            {
                "quality": judged_scorer(answering_judge(), "quality"),
                "rare": LiveScorerEntry(
                    judged_scorer(answering_judge(), "rare"), sampling=Sampling.ratio(0.0)
                ),
                "picky": LiveScorerEntry(
                    judged_scorer(answering_judge(), "picky"), filter=lambda call: False
                ),
            },
            sinks=[BrokenSink()],
            drain_on_exit=False,
        )

        @live.watch(target="support-bot")
        async def answer(question: str) -> str:
            return "an answer"

        tracer = telemetry.tracer_provider.get_tracer("app")
        with tracer.start_as_current_span("agent request") as agent_span:
            assert await answer("q") == "an answer"
        assert await live.drain(10)
        agent = agent_span.get_span_context()

        run_span = telemetry.span("evaluation quality")
        assert run_span.parent is None  # not a child: the agent's trace never waits for it
        (link,) = run_span.links
        assert (link.context.trace_id, link.context.span_id) == (agent.trace_id, agent.span_id)
        attributes = dict(run_span.attributes or {})
        assert attributes["scorewatch.score_source"] == "live"
        assert attributes["scorewatch.run_id"] == (
            f"scoring-quality-{agent.trace_id:032x}-{agent.span_id:016x}"
        )
        (event,) = telemetry.logs()
        assert event.log_record.span_id == agent.span_id

        def decisions(scorer: str, decision: str) -> float | None:
            point = telemetry.point(
                names.METRIC_LIVE_DECISIONS,
                gen_ai__evaluation__name=scorer,
                scorewatch__decision=decision,
            )
            return point.value

        assert decisions("quality", "sampled") == 1
        assert decisions("rare", "not_sampled") == 1
        assert decisions("picky", "filtered") == 1
        assert telemetry.point(names.METRIC_LIVE_IN_FLIGHT).value == 0
        assert telemetry.point(names.METRIC_SINK_ERRORS, scorewatch__sink="broken").value == 1
        await live.aclose()


async def test_queue_depth_and_in_flight_follow_the_queue() -> None:
    with in_memory_telemetry() as telemetry:
        judge = GatedJudge()
        live = LiveScoring(
            {"quality": judged_scorer(judge)}, max_concurrency=2, max_queue=3, drain_on_exit=False
        )
        for i in range(6):
            live.submit(output=str(i))
        await asyncio.sleep(0.01)
        assert judge.waiting == 2
        assert telemetry.point(names.METRIC_LIVE_QUEUE_DEPTH).value == 1
        assert telemetry.point(names.METRIC_LIVE_IN_FLIGHT).value == 2
        dropped = telemetry.point(
            names.METRIC_LIVE_DECISIONS,
            gen_ai__evaluation__name="quality",
            scorewatch__decision="dropped_queue_full",
        )
        assert dropped.value == 3
        judge.open()
        assert await live.drain(10)
        assert telemetry.point(names.METRIC_LIVE_QUEUE_DEPTH).value == 0
        assert telemetry.point(names.METRIC_LIVE_IN_FLIGHT).value == 0
        await live.aclose()


async def test_runs_in_flight_are_read_from_the_queue_not_told_as_events() -> None:
    """An engine's runs in flight reach the metric through its `QueueDepth` reading (a run
    tells no `InFlight` event as it starts or ends); a queue worker's `InFlight` events add to
    them."""
    from scorewatch.core.events import Observer, Observers
    from scorewatch.live.events import InFlight, QueueDepth

    heard: list[object] = []

    class Listening(Observer):
        def handlers(self) -> dict[type, Any]:
            return {InFlight: heard.append}

    bus = Observers()
    bus.add(Listening())
    judge = GatedJudge()
    live = LiveScoring(
        {"quality": judged_scorer(judge)},
        max_concurrency=2,
        max_queue=3,
        drain_on_exit=False,
        observers=bus,
    )
    for i in range(3):
        live.submit(output=str(i))
    await asyncio.sleep(0.01)
    assert judge.waiting == 2
    assert [reading.in_flight for reading in bus.read(QueueDepth)] == [2]
    assert QueueDepth.running(bus) == live.stats()["in_flight"] == 2
    assert QueueDepth.total(bus) == 1
    judge.open()
    assert await live.drain(10)
    assert QueueDepth.running(bus) == 0
    assert heard == []
    await live.aclose()

    with in_memory_telemetry() as telemetry:
        judge = GatedJudge()
        live = LiveScoring({"quality": judged_scorer(judge)}, max_concurrency=2, max_queue=3)
        live.submit(output="a")
        await asyncio.sleep(0.01)
        from scorewatch.core.events import OBSERVERS

        OBSERVERS.emit(InFlight(1))  # a queue worker's run, on the same bus
        assert telemetry.point(names.METRIC_LIVE_IN_FLIGHT).value == 2
        OBSERVERS.emit(InFlight(-1))
        judge.open()
        assert await live.drain(10)
        assert telemetry.point(names.METRIC_LIVE_IN_FLIGHT).value == 0
        await live.aclose()
