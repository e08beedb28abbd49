"""Filters and deterministic sampling, in the reference order: filter first, then sampling."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import scorewatch as sw
from live_support import Collected, constant_scorer
from scorewatch.live import AgentCall, LiveScorerEntry, LiveScoring, Sampling

pytestmark = pytest.mark.unit


def trace_ids(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(count)]


def reference_decision(key: str, rate: float) -> bool:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:6], "big") / 2**48 < rate


def test_ratio_sampling_is_the_reference_hash_and_deterministic() -> None:
    sampling = Sampling.ratio(0.1)
    keys = trace_ids(1000)
    first = [sampling.should_sample(k) for k in keys]
    assert first == [sampling.should_sample(k) for k in keys]
    assert first == [reference_decision(k, 0.1) for k in keys]
    assert 70 <= sum(first) <= 130


def test_rate_bounds_none_and_reference_shapes() -> None:
    keys = trace_ids(200, seed=3)
    assert all(Sampling.none().should_sample(k) for k in keys)
    assert all(Sampling.ratio(1.0).should_sample(k) for k in keys)
    assert not any(Sampling.ratio(0.0).should_sample(k) for k in keys)
    assert Sampling.coerce({"type": "ratio", "rate": 0.25}) == Sampling.ratio(0.25)
    assert Sampling.coerce({"type": "none"}) == Sampling.none()
    for bad in (-0.1, 1.5, float("nan"), True):
        with pytest.raises(ValueError):
            Sampling.ratio(bad)
    with pytest.raises(ValueError, match="unknown sampling type"):
        Sampling.coerce({"type": "reservoir"})


def test_live_sampling_counts_every_decision_and_agrees_across_scorers() -> None:
    live = LiveScoring(
        {
            "a": LiveScorerEntry(constant_scorer("a"), sampling=Sampling.ratio(0.1)),
            "b": LiveScorerEntry(constant_scorer("b"), sampling=Sampling.ratio(0.1)),
        },
        drain_on_exit=False,
    )
    keys = trace_ids(1000, seed=11)
    decisions = [
        live.submit(input="q", output="a", trace_id=k, span_id="00f067aa0ba902b7") for k in keys
    ]
    expected = sum(reference_decision(k, 0.1) for k in keys)
    assert 70 <= expected <= 130
    # One trace is scored by every scorer at the same rate, or by none.
    assert all(d["a"] == d["b"] for d in decisions)
    assert live.drain_sync(20)
    stats = live.stats()
    assert stats["sampled"] == 2 * expected
    assert stats["not_sampled"] == 2 * (1000 - expected)
    assert stats["scored"] == 2 * expected
    live.close()


def test_without_a_trace_the_run_id_keys_sampling() -> None:
    live = LiveScoring(
        {"a": LiveScorerEntry(constant_scorer("a"), sampling=Sampling.ratio(0.5))},
        drain_on_exit=False,
    )
    run_ids = [f"run-{i}" for i in range(300)]
    decisions = [live.submit(output="x", run_id=r)["a"] for r in run_ids]
    assert decisions == [
        "sampled" if reference_decision(r, 0.5) else "not_sampled" for r in run_ids
    ]
    live.close()


def test_the_current_opentelemetry_span_keys_sampling_and_the_run_id() -> None:
    collected = Collected()
    live = LiveScoring(
        {"q": constant_scorer("quality")}, sinks=[collected.sink()], drain_on_exit=False
    )
    tracer = TracerProvider().get_tracer("agent")
    with tracer.start_as_current_span("agent call") as span:
        live.submit(input="q", output="a", target="bot")
        context = span.get_span_context()
    trace_hex, span_hex = format(context.trace_id, "032x"), format(context.span_id, "016x")
    assert live.drain_sync(10)
    (result,) = collected.results
    assert (result.call.trace_id, result.call.span_id) == (trace_hex, span_hex)
    assert result.id == f"scoring-quality-{trace_hex}-{span_hex}"
    assert result.result is not None and result.result.run_id == result.id
    assert result.result.target_trace_id == trace_hex
    assert result.result.score_source == "live"
    live.close()


def test_run_ids_are_deterministic_and_repeated_calls_in_one_span_stay_distinct() -> None:
    collected = Collected()
    live = LiveScoring(
        {"q": constant_scorer("quality")}, sinks=[collected.sink()], drain_on_exit=False
    )
    live.submit(output="1", trace_id="t1", span_id="s1")
    live.submit(output="2", trace_id="t1", span_id="s1")
    live.submit(output="3", run_id="agent-run-9", target="bot")
    assert live.drain_sync(10)
    assert sorted(collected.ids()) == [
        "scoring-quality-agent-run-9-bot",
        "scoring-quality-t1-s1",
        "scoring-quality-t1-s1-2",
    ]
    live.close()


def test_the_filter_runs_before_sampling_and_sees_the_call() -> None:
    seen: list[AgentCall] = []

    def only_premium(call: AgentCall) -> bool:
        seen.append(call)
        return bool(call.request_context and call.request_context.get("tier") == "premium")

    live = LiveScoring(
        {
            "never_sampled": LiveScorerEntry(
                constant_scorer("never"), sampling=Sampling.ratio(0.0), filter=only_premium
            ),
            "always": LiveScorerEntry(constant_scorer("always"), filter=only_premium),
        },
        drain_on_exit=False,
    )
    first = live.submit(input="q", output="a", target="bot", request_context={"tier": "free"})
    second = live.submit(input="q", output="a", target="bot", request_context={"tier": "premium"})
    # Filtered calls are counted as filtered even when sampling would have skipped them anyway.
    assert first == {"never_sampled": "filtered", "always": "filtered"}
    assert second == {"never_sampled": "not_sampled", "always": "sampled"}
    assert len(seen) == 4
    assert seen[0].target == "bot" and seen[0].input == "q" and seen[0].output == "a"
    assert live.drain_sync(10)
    stats = live.stats()
    assert (stats["filtered"], stats["not_sampled"], stats["sampled"]) == (2, 1, 1)
    live.close()


def test_a_raising_or_async_filter_skips_and_is_counted(caplog: Any) -> None:
    async def async_filter(call: AgentCall) -> bool:
        return True

    def raising_filter(call: AgentCall) -> bool:
        raise ValueError("bad filter")

    live = LiveScoring(
        {
            "raising": LiveScorerEntry(constant_scorer("raising"), filter=raising_filter),
            "async": LiveScorerEntry(constant_scorer("async"), filter=async_filter),  # type: ignore[arg-type]
        },
        drain_on_exit=False,
    )
    for _ in range(3):
        assert live.submit(output="x") == {"raising": "filtered", "async": "filtered"}
    assert live.stats()["filtered"] == 6
    assert "raised; call skipped" in caplog.text
    live.close()


def test_an_entry_marks_its_review_sample_in_the_stored_records() -> None:
    """`review_rate` marks a share of a scorer's successful runs, chosen from the run id (apart
    from trace sampling); a failed run is never marked, and a rate outside 0..1 is refused."""

    def explode(ctx: Any) -> float:
        raise RuntimeError("no score")

    failing = sw.create_scorer(id="failing", description="fails").generate_score(explode)
    collected = Collected()
    live = LiveScoring(
        {
            "a": LiveScorerEntry(constant_scorer("a"), review_rate=0.3),
            "failing": LiveScorerEntry(failing, review_rate=1.0),
        },
        sinks=[collected.sink()],
        drain_on_exit=False,
    )
    for key in trace_ids(200, seed=5):
        live.submit(input="q", output="a", trace_id=key, span_id="00f067aa0ba902b7")
    assert live.drain_sync(30)
    live.close()
    scored = [r for r in collected.results if r.scorer_id == "a"]
    assert len(scored) == 200
    marked = {r.id for r in scored if r.review}
    assert marked == {r.id for r in scored if reference_decision(f"review:{r.id}", 0.3)}
    assert 30 <= len(marked) <= 90
    assert all(r.to_row()["reviewSampled"] == r.review for r in scored)
    assert not any(r.review for r in collected.results if r.scorer_id == "failing")
    for bad in (-0.1, 1.5, float("nan"), True):
        with pytest.raises(ValueError, match="review rate"):
            LiveScorerEntry(constant_scorer(), review_rate=bad)
