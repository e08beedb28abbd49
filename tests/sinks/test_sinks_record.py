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
from scorewatch.core.errors import failure_code
from scorewatch.evals import ExperimentSinkWriter
from scorewatch.judge.errors import JudgeError, JudgeTimeoutError
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


def _by_keywords(
    record: ScoreRecord, scorer: sw.Scorer, given: BaseException | None, cause: BaseException | None
) -> ScoreRecord:
    """The record `ScoreRecord._of` must equal: its fields passed to the dataclass's own
    `__init__`, as `_of` built it before it set them in one loop."""
    return ScoreRecord(
        id=record.id,
        scorer_id=scorer.id,
        scorer_name=scorer.name,
        scorer_description=scorer.description,
        has_judge=scorer.has_judge,
        call=record.call,
        status=record.status,
        scorer_version=scorer.version_fingerprint,
        scorer_declared_version=scorer.declared_version,
        result=record.result,
        error=None if given is None else str(given) or type(given).__name__,
        error_code=None if given is None else failure_code(given),
        error_type=None if cause is None else type(cause).__name__,
        failed_step=record.failed_step,
        completed_steps=record.completed_steps,
        created_at=record.created_at,
        source=record.source,
        retryable=not (isinstance(cause, JudgeError) and not cause.retryable),
        redaction=record.redaction,
        review=record.review,
    )


@pytest.mark.parametrize("declared", [None, "2"])
@pytest.mark.parametrize(
    "error",
    [
        None,
        ValueError("bad"),
        ValueError(""),
        JudgeError("refused", retryable=False),
        JudgeTimeoutError("slow"),
    ],
)
@pytest.mark.parametrize("step_fails", [False, True])
def test_a_record_sets_every_field_as_its_init_would(
    declared: str | None, error: BaseException | None, step_fails: bool
) -> None:
    """`_of` sets the frozen record's fields in one loop: each holds what the dataclass's
    `__init__` would have set, and none is left unset (a field added to the class and not to
    `_of` shows up here)."""
    scorer = sw.create_scorer(id="r", description="d", version=declared).generate_score(
        lambda ctx: 0.5
    )
    call = AgentCall(input="q", output="a", target="bot")
    if error is None:
        result = asyncio.run(scorer.run(output="a", run_id="run-1"))
        record = ScoreRecord.success("run-1", scorer, call, result, source="TEST", review=True)
        given = cause = None
    elif step_fails:

        def failing(ctx: Any) -> float:
            raise error

        broken = sw.create_scorer(id="r", description="d", version=declared).generate_score(failing)
        with pytest.raises(sw.ScorerRunError) as raised:
            asyncio.run(broken.run(output="a", run_id="run-1"))
        scorer, given = broken, raised.value
        record = ScoreRecord.failure("run-1", scorer, call, given)
        cause = given.__cause__
        assert record.failed_step == "generate_score"
    else:
        record = ScoreRecord.failure("run-1", scorer, call, error)
        given = cause = error
    for name in ScoreRecord.__slots__:
        getattr(record, name)  # every slot set: an unset one raises AttributeError
    assert record == _by_keywords(record, scorer, given, cause)
    assert record.redaction is None
    assert record.retryable is not (isinstance(error, JudgeError) and not error.retryable)
    assert type(record) is ScoreRecord


def test_a_record_made_by_its_draft_is_a_frozen_score_record() -> None:
    """`_of` fills a `_Draft` (the record's slots, not frozen) and makes it the record: the
    result is a plain `ScoreRecord` in every way (frozen, copied, compared, pickled alike)."""
    import copy
    import dataclasses
    import pickle

    from scorewatch.sinks.record import _Draft

    assert _Draft.__slots__ == ScoreRecord.__slots__
    call = AgentCall(input="q", output="a", target="bot")
    record = ScoreRecord.success("run-1", _scorer(), call, _scorer().run_sync(output="a"))
    assert type(record) is ScoreRecord and isinstance(record, ScoreRecord)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.id = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(record)) == record == copy.copy(record)
    assert dataclasses.replace(record, id="run-2").id == "run-2"
    assert repr(record).startswith("ScoreRecord(id='run-1', ")


def test_a_subclass_of_the_record_is_made_as_its_own_class() -> None:
    """A subclass may add fields of its own: `_of` makes it the general way (no draft of its
    layout), with every field of the record set."""
    import dataclasses

    @dataclasses.dataclass(frozen=True, slots=True)
    class Tagged(ScoreRecord):
        tag: str = "none"

    call = AgentCall(input="q", output="a", target="bot")
    result = _scorer().run_sync(output="a")
    record = Tagged.success("run-1", _scorer(), call, result)
    assert type(record) is Tagged
    plain = ScoreRecord.success("run-1", _scorer(), call, result)
    for field in dataclasses.fields(ScoreRecord):
        if field.name != "created_at":
            assert getattr(record, field.name) == getattr(plain, field.name), field.name
