"""Traces no scorer samples, decided from the trace id on arrival (`TraceSampling`): the decision
is admission's own, their spans are counted and still refused when sent twice, and the runs of
the sampled traces are scored exactly once."""

from __future__ import annotations

import random
import tomllib
from typing import Any

import pytest

import scorewatch as sw
from scorewatch.core.call import AgentCall
from scorewatch.live.entry import LiveScorerEntry, Sampling, fraction_of
from scorewatch.server.config.file import ServeConfig
from scorewatch.server.config.scorer_entries import build_scorers
from scorewatch.server.intake.admission import plan_items
from scorewatch.server.intake.in_process import InProcessIntake
from scorewatch.server.intake.interface import ScoreItem
from scorewatch.server.intake.otlp_traces import TracesIntake, build_traces_intake
from scorewatch.server.intake.trace_sampling import TraceSampling
from scorewatch.sinks.callback import CallbackSink
from scorewatch.sinks.record import ScoreRecord
from trace_intake_support import messages, raw_request, raw_span

pytestmark = pytest.mark.unit


def _scorer(scorer_id: str) -> Any:
    return sw.create_scorer(id=scorer_id, description=scorer_id).generate_score(lambda c: 1.0)


def _entry(scorer_id: str, rate: float | None, **fields: Any) -> LiveScorerEntry:
    sampling = Sampling.none() if rate is None else Sampling.ratio(rate)
    return LiveScorerEntry(_scorer(scorer_id), sampling=sampling, **fields)


@pytest.mark.parametrize(
    "rates",
    [[0.5], [0.1, 0.3], [0.0], [None], [0.0, 0.02], [1.0], [0.25, 0.0, 0.7]],
)
def test_the_decision_on_arrival_is_admissions_decision_on_the_run(
    rates: list[float | None],
) -> None:
    entries = {f"s{i}": _entry(f"s{i}", rate) for i, rate in enumerate(rates)}
    sampling = TraceSampling.of(entries.values())
    assert sampling is not None
    draw = random.Random(36)
    trace_ids = [draw.randbytes(16) for _ in range(3000)] + [b""]
    items = [
        ScoreItem(AgentCall("in", "out", "agent", trace_id=raw.hex(), span_id="ab" * 8, run_id="x"))
        for raw in trace_ids
    ]
    plans = plan_items(entries, items)
    by_admission = [bool(plan.sampled) for plan in plans]
    on_arrival = [sampling.sampled(raw) for raw in trace_ids]
    assert on_arrival[:-1] == by_admission[:-1]
    # Without a trace id a run is sampled by its own id: kept for extraction unless nothing can.
    assert on_arrival[-1] == (rates != [0.0])
    # Both ways happen at a rate strictly between 0 and 1 (the comparison above means something).
    if any(rate is not None and 0 < rate < 1 for rate in rates):
        assert 0 < sum(on_arrival) < len(on_arrival) - 1


def test_filters_and_budgets_that_may_sample_leave_every_trace_to_extraction() -> None:
    def keep_all(call: AgentCall) -> bool:
        return True

    assert TraceSampling.of([_entry("a", 0.5, filter=keep_all)]) is None
    assert TraceSampling.of([_entry("a", 0.5)], governed=lambda entry: True) is None
    # A scorer at rate 0 never samples, whatever its filter says.
    assert TraceSampling.of([_entry("a", 0.0, filter=keep_all), _entry("b", 0.3)]) == (
        TraceSampling(0.3)
    )
    assert TraceSampling.of([]) == TraceSampling(0.0)


def _config(text: str) -> ServeConfig:
    return ServeConfig.from_mapping(tomllib.loads(text))


def _agent_trace(number: int) -> list[Any]:
    """An agent span (selected, with content) and a step under it, in trace `number`."""
    return [
        raw_span(
            number,
            1,
            name="invoke_agent shop",
            gen_ai__agent__name="shop",
            gen_ai__input__messages=messages("user", f"question {number}"),
            gen_ai__output__messages=messages("assistant", f"answer {number}"),
        ),
        raw_span(number, 2, 1),
    ]


async def test_unsampled_traces_are_counted_refused_twice_and_never_extracted() -> None:
    config = _config(
        '[[scorers]]\nid = "length"\nkind = "completeness"\nsampling = 0.5\n'
        "[traces]\n[traces.buffer]\nquiet_period_s = 100\nmax_age_s = 500"
    )
    entries = {c.id: c.entry for c in build_scorers(config)}
    stored: list[ScoreRecord] = []
    inner = InProcessIntake(
        entries, sinks=[CallbackSink(stored.append)], max_concurrency=2, max_queue=100
    )
    intake = build_traces_intake(config, inner, entries)
    assert isinstance(intake, TracesIntake)
    traces = range(1, 61)
    request = raw_request([span for number in traces for span in _agent_trace(number)])
    sampled = {f"{n:032x}" for n in traces if fraction_of(f"{n:032x}") < 0.5}
    assert 10 < len(sampled) < 50

    offer = await intake.receive(lambda: request, "127.0.0.1")
    assert offer.refused is None and offer.dropped == 0
    again = await intake.receive(lambda: request, "127.0.0.1")  # an exporter's retry
    assert again.refused is None and again.dropped == 2 * len(traces)
    unsampled_spans = 2 * (len(traces) - len(sampled))
    stats = intake.stats()
    assert stats["traces_spans_held"] == 2 * len(traces)  # the unsampled as ids
    assert stats["traces_held"] == len(traces)
    counts = intake.trace_counts()
    assert counts.spans_received == 4 * len(traces)
    assert counts.spans_dropped == {"duplicate": 2 * len(traces), "not_sampled": unsampled_spans}

    assert await intake.shutdown(5) == 0
    assert {record.call.trace_id for record in stored} == sampled
    assert len(stored) == len(sampled)  # each sampled run scored once
    assert intake.trace_counts().runs == {"admitted": len(sampled)}
    assert intake.stats()["traces_bytes_held"] == 0  # every trace let go at the flush
    await intake.aclose()


async def test_with_sessions_every_trace_is_extracted() -> None:
    config = _config(
        '[[scorers]]\nid = "length"\nkind = "completeness"\nsampling = 0\n'
        '[[scorers]]\nid = "turns"\nkind = "completeness"\n'
        "[traces]\n[traces.buffer]\nquiet_period_s = 0\n"
        '[traces.sessions]\nscorers = ["turns"]\nidle_s = 1000'
    )
    entries = {c.id: c.entry for c in build_scorers(config)}
    inner = InProcessIntake(entries, sinks=[], max_concurrency=1, max_queue=10)
    intake = build_traces_intake(config, inner, entries)
    assert isinstance(intake, TracesIntake)
    turn = raw_span(
        7,
        1,
        name="invoke_agent shop",
        gen_ai__conversation__id="ann",
        gen_ai__input__messages=messages("user", "hello"),
        gen_ai__output__messages=messages("assistant", "hi"),
    )
    assert (await intake.receive(lambda: raw_request([turn]), "127.0.0.1")).refused is None
    await intake.release()
    assert intake.stats()["traces_sessions_open"] == 1  # the turn of an unsampled trace
    assert "not_sampled" not in intake.trace_counts().spans_dropped
    await intake.shutdown(5)
    await intake.aclose()


def test_a_buffer_holds_unsampled_traces_as_ids_within_its_bounds() -> None:
    from scorewatch.traces.assembly import BufferLimits, TraceBuffer
    from scorewatch.traces.spans import UnsampledSpans

    now = [0.0]
    limits = BufferLimits(
        max_bytes=4096, max_spans_per_trace=3, linger_s=10, quiet_period_s=1, max_age_s=100
    )
    buffer = TraceBuffer(limits=limits, clock=lambda: now[0])
    resource = {"service.name": "shop"}

    def group(trace: str, *ids: int, size: int = 100) -> UnsampledSpans:
        return UnsampledSpans(
            trace, resource, 50, [i.to_bytes(8, "big") for i in ids], [size] * len(ids)
        )

    offer = buffer.offer([], "10.0.0.1", [group("a" * 32, 1, 2, 2), group("b" * 32, 1)])
    assert offer.refused is None and offer.dropped == 1  # the second 2: a duplicate
    assert (len(buffer), buffer.spans_held, buffer.bytes_held) == (2, 3, 350)
    offer = buffer.offer([], "10.0.0.1", [group("a" * 32, 2, 3, 4)])
    assert offer.dropped == 2  # 2 again, and 4 past max_spans_per_trace
    assert buffer.counts.spans_dropped == {"duplicate": 2, "max_spans_per_trace": 1}
    assert buffer.counts.spans_unsampled == 4
    # The bounds count them by their sizes: one client may hold half of max_bytes.
    too_much = buffer.offer([], "10.0.0.1", [group("c" * 32, 1, size=2000)])
    assert too_much.refused == "client_share"
    now[0] = 5.0
    buffer.offer([], "10.0.0.1", [group("b" * 32, 9)])  # b arrives again: stays longer
    now[0] = 12.0
    assert buffer.pop_ready() == [] and len(buffer) == 1  # a lingered 12 s, b only 7
    now[0] = 15.0
    buffer.pop_ready()
    assert (len(buffer), buffer.spans_held, buffer.bytes_held) == (0, 0, 0)
    assert buffer.counts.traces_completed == 2
    # A trace that never goes quiet ends at max_age_s, at its next span.
    longer = limits.model_copy(update={"max_spans_per_trace": 100})
    buffer = TraceBuffer(limits=longer, clock=lambda: now[0])
    for moment in range(20, 130, 5):
        now[0] = float(moment)
        buffer.offer([], "10.0.0.1", [group("d" * 32, moment)])
        buffer.pop_ready()
    assert buffer.counts.traces_evicted == {"max_age": 1} and len(buffer) == 1
