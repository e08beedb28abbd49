"""Building a LiveScoring: scorer entries, validation, and broken scorers counted as failures."""

from __future__ import annotations

import pytest

import scorewatch as sw
from live_support import Collected, constant_scorer
from scorewatch.live import LiveScorerEntry, LiveScoring, Sampling

pytestmark = pytest.mark.unit


def test_entries_accept_scorers_entries_and_reference_shaped_mappings() -> None:
    live = LiveScoring(
        {
            "bare": constant_scorer("bare"),
            "entry": LiveScorerEntry(constant_scorer("entry"), sampling=Sampling.ratio(0.5)),
            "mapping": {"scorer": constant_scorer("mapping"), "sampling": {"type": "none"}},
        },
        drain_on_exit=False,
    )
    assert live.entries["bare"].sampling == Sampling.none()
    assert live.entries["entry"].sampling == Sampling.ratio(0.5)
    assert live.entries["mapping"].sampling == Sampling.none()
    live.close()


def test_invalid_configurations_are_refused_up_front() -> None:
    with pytest.raises(ValueError, match="share the scorer id 'same'"):
        LiveScoring({"a": constant_scorer("same"), "b": constant_scorer("same")})
    with pytest.raises(TypeError, match="not a ScoreSink"):
        LiveScoring({"a": constant_scorer()}, sinks=[object()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_concurrency"):
        LiveScoring({"a": constant_scorer()}, max_concurrency=0)
    with pytest.raises(TypeError, match="must be a Scorer"):
        LiveScorerEntry("not a scorer")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="filter must be callable"):
        LiveScorerEntry(constant_scorer(), filter="tier == premium")  # type: ignore[arg-type]


def test_a_scorer_that_cannot_run_is_counted_as_failed_and_stored_as_a_failure() -> None:
    no_score_step = sw.create_scorer(id="incomplete", description="no generate_score")
    collected = Collected()
    live = LiveScoring(
        {"incomplete": no_score_step, "ok": constant_scorer("ok")},
        sinks=[collected.sink()],
        drain_on_exit=False,
    )
    assert live.submit(output="x") == {"incomplete": "sampled", "ok": "sampled"}
    assert live.drain_sync(10)
    stats = live.stats()
    assert (stats["failed"], stats["scored"]) == (1, 1)
    (failure,) = [r for r in collected.results if r.status == "failed"]
    assert failure.score is None
    assert failure.error_code == "MASTR_SCORER_FAILED_TO_RUN_MISSING_GENERATE_SCORE"
    assert failure.failed_step is None
    live.close()
