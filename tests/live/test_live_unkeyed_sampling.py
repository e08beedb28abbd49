"""Calls with neither a trace id nor a run id are sampled by one uniform draw per call (the hash of
a fresh random id would be just that), without building the call when no scorer takes it."""

from __future__ import annotations

import pytest

import scorewatch as sw
from scorewatch.live import LiveScorerEntry, LiveScoring, Sampling

pytestmark = pytest.mark.unit


def scorer(scorer_id: str) -> sw.Scorer:
    return sw.create_scorer(id=scorer_id, description="d").generate_score(lambda ctx: 1.0)


async def test_nested_rates_stay_nested_and_every_decision_is_counted() -> None:
    live = LiveScoring(
        {
            "rare": LiveScorerEntry(scorer("rare"), sampling=Sampling.ratio(0.3)),
            "often": LiveScorerEntry(scorer("often"), sampling=Sampling.ratio(0.6)),
        },
        max_queue=10_000,
        drain_on_exit=False,
    )
    calls = 2_000
    taken = {"rare": 0, "often": 0}
    for i in range(calls):
        decisions = live.submit(input=f"q{i}", output="a")
        if decisions["rare"] == "sampled":
            assert decisions["often"] == "sampled"  # one draw per call: rates nest
        for key, decision in decisions.items():
            taken[key] += decision == "sampled"
    await live.drain(timeout=30)
    stats = live.stats()
    assert stats["sampled"] + stats["not_sampled"] == 2 * calls
    assert stats["sampled"] == taken["rare"] + taken["often"]
    assert stats["scored"] == stats["sampled"]
    # Loose bounds (binomial, n=2000): the draw is uniform, not stuck at either end.
    assert 450 < taken["rare"] < 750
    assert 1050 < taken["often"] < 1350
    await live.aclose(timeout=5)


async def test_nothing_sampled_answers_a_fresh_dict_each_call() -> None:
    live = LiveScoring(
        {"never": LiveScorerEntry(scorer("never"), sampling=Sampling.ratio(0.0))},
        drain_on_exit=False,
    )
    first = live.submit(input="q", output="a")
    first["never"] = "sampled"  # the caller's copy: mutating it changes nothing for the next
    second = live.submit(input="q", output="a")
    assert second == {"never": "not_sampled"}
    assert live.stats()["not_sampled"] == 2
    await live.aclose(timeout=5)


async def test_a_given_run_id_still_keys_sampling_deterministically() -> None:
    live = LiveScoring(
        {"half": LiveScorerEntry(scorer("half"), sampling=Sampling.ratio(0.5))},
        max_queue=10_000,
        drain_on_exit=False,
    )
    decisions = [live.submit(input="q", output="a", run_id=f"run-{i}") for i in range(50)]
    again = [live.submit(input="q", output="a", run_id=f"run-{i}") for i in range(50)]
    assert decisions == again
    await live.drain(timeout=30)
    await live.aclose(timeout=5)
