"""The one score record: every producer's row has the same shape, and the names it replaced in
`scorewatch.live` still resolve (with a warning) to the one type."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

import scorewatch as sw
import scorewatch.live
from scorewatch.core.call import AgentCall
from scorewatch.evals import ExperimentSinkWriter
from scorewatch.sinks import SCORE_COLUMNS, CallbackSink, ScoreRecord
from scorewatch.sinks.record import ScoreRecord as RecordFromModule

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("LiveResult", ScoreRecord),
        ("LiveCall", AgentCall),
        ("ScorerEntry", scorewatch.live.LiveScorerEntry),
    ],
)
def test_the_old_live_names_warn_and_resolve_to_the_one_type(old: str, new: object) -> None:
    with pytest.warns(DeprecationWarning, match=f"scorewatch.live.{old} is now"):
        assert getattr(scorewatch.live, old) is new
    assert old not in scorewatch.live.__all__


def test_the_sinks_old_call_name_warns_and_resolves_to_the_one_call_type() -> None:
    import scorewatch.sinks

    with pytest.warns(DeprecationWarning, match="scorewatch.sinks.ScoredCall is now"):
        assert scorewatch.sinks.ScoredCall is AgentCall  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = scorewatch.sinks.NoSuchThing  # type: ignore[attr-defined]


def test_an_unknown_live_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = scorewatch.live.NoSuchThing  # type: ignore[attr-defined]


def test_live_reexports_the_sinks_objects_themselves() -> None:
    assert scorewatch.live.ScoreRecord is RecordFromModule
    assert scorewatch.live.CallbackSink is CallbackSink
    assert importlib.import_module("scorewatch.sinks.record").ScoreRecord is ScoreRecord


def _scorer() -> sw.Scorer:
    return sw.create_scorer(id="length", description="Answer length").generate_score(
        lambda ctx: min(len(str(ctx.run.output)) / 10, 1.0)
    )


def test_an_experiment_and_a_live_call_give_rows_of_one_shape() -> None:
    stored: list[ScoreRecord] = []
    data: list[dict[str, Any]] = [{"input": "q", "output": "a short answer"}]
    writer = ExperimentSinkWriter([CallbackSink(stored.append)], data, target="bot")
    asyncio.run(sw.run_experiment(data=data, scorers=[_scorer()], on_result=writer))
    (experiment,) = stored
    call = AgentCall(
        input="q", output="a short answer", target="bot", trace_id=None, span_id=None, run_id="r"
    )
    live = ScoreRecord.success("run-1", _scorer(), call, _scorer().run_sync(output=call.output))
    experiment_row, live_row = experiment.to_row(), live.to_row()
    assert list(experiment_row) == list(live_row) == list(SCORE_COLUMNS)
    assert (experiment_row["source"], live_row["source"]) == ("TEST", "LIVE")
    assert experiment_row["score"] == live_row["score"] == 1.0
    assert experiment_row["entityId"] == live_row["entityId"] == "bot"
