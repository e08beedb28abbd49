"""A call whose fields its maker checked (`AgentCall.of_checked_fields`, serve's request model)
is scored without checking its run again (`run_scorer(..., checked=True)`): the same record,
the same events, the same failures as the same call scored with the check, and the check is
still made when the scorer's `prepare_run` may have changed the run."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scorewatch as sw
from scorewatch.core import AgentCall, ScorerRun
from scorewatch.core.errors import ScorerRunError
from scorewatch.core.events import Observer, Observers, RunListener, RunStart, observed_by
from scorewatch.core.pipeline import run_scorer
from scorewatch.live.engine import score_call
from scorewatch.sinks.record import ScoreRecord

pytestmark = pytest.mark.unit

_TEXT = st.one_of(st.none(), st.text(max_size=4))
_VALUE = st.one_of(
    st.none(), st.integers(-2, 2), st.text(max_size=4), st.lists(st.integers(), max_size=2)
)


class _Recorder(Observer):
    """Every event of every run, with what it carried (durations left out: they are clocks)."""

    def __init__(self) -> None:
        self.heard: list[tuple[Any, ...]] = []

    def run_started(self, start: RunStart) -> RunListener:
        heard = self.heard
        heard.append(("run_started", start.emit_score, start.links))

        class Listener(RunListener):
            def step_started(self, step: str, step_type: str) -> None:  # type: ignore[override]
                heard.append(("step_started", step, step_type))

            def step_finished(self, outcome: Any) -> None:
                heard.append(
                    ("step_finished", outcome.step, outcome.step_type, repr(outcome.error),
                     outcome.prompt, outcome.execution, repr(outcome.result))
                )  # fmt: skip

            def run_finished(self, result: Any, duration_s: float) -> None:
                heard.append(("run_finished", result.model_dump(mode="json", by_alias=True)))

            def run_failed(self, error: BaseException, duration_s: float) -> None:
                heard.append(("run_failed", repr(error)))

        return Listener()


def _scorer(fail_at: str | None, value: Any) -> sw.Scorer:
    def measure(ctx: Any) -> Any:
        if fail_at == "preprocess":
            raise ValueError("measure failed")
        return {"value": value, "target": ctx.run.target}

    def score(ctx: Any) -> float:
        if fail_at == "generate_score":
            raise ValueError("score failed")
        return 0.5

    return sw.create_scorer(id="checked", description="d").preprocess(measure).generate_score(score)


def _kept(record: ScoreRecord) -> dict[str, Any]:
    """What a record says, but its creation time."""
    fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    del fields["created_at"]
    result = fields.pop("result")
    fields["result"] = None if result is None else result.model_dump(mode="json", by_alias=True)
    return fields


def _scored(scorer: sw.Scorer, call: AgentCall, run_id: Any) -> tuple[dict[str, Any], list[Any]]:
    recorder = _Recorder()
    bus = Observers()
    bus.add(recorder)
    with observed_by(bus):
        record = asyncio.run(score_call(scorer, call, run_id))
    return _kept(record), recorder.heard


@settings(max_examples=100, deadline=None)
@given(
    values=st.tuples(_VALUE, _VALUE, _TEXT, _TEXT, _TEXT, _TEXT, _VALUE, _VALUE),
    metadata=st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _VALUE, max_size=2)),
    trace=st.booleans(),
    fail_at=st.sampled_from([None, "preprocess", "generate_score"]),
    step_value=_VALUE,
)
def test_a_checked_call_scores_as_the_same_call_checked_again(
    values: tuple[Any, ...], metadata: Any, trace: bool, fail_at: str | None, step_value: Any
) -> None:
    source = "trace" if trace else "live"
    fields = (*values, metadata, source)
    plain = AgentCall(*fields)
    checked = AgentCall.of_checked_fields(*fields)
    assert checked.fields_checked and not plain.fields_checked
    scorer = _scorer(fail_at, step_value)

    assert _scored(scorer, checked, "run-1") == _scored(scorer, plain, "run-1")


def test_a_failing_step_of_a_checked_run_keeps_its_snapshot() -> None:
    call = AgentCall.of_checked_fields("in", "out", "bot")
    scorer = _scorer("generate_score", 3)

    with pytest.raises(ScorerRunError) as raised:
        asyncio.run(run_scorer(scorer, ScorerRun.of_call(call, "run-1"), True, True))

    error = raised.value
    assert error.failed_step == "generate_score"
    assert error.completed_steps == ["preprocess"]
    assert error.result is not None
    assert error.result.preprocess_step_result == {"value": 3, "target": "bot"}
    assert error.result.run_id == "run-1"
    assert error.result.target == "bot"


def test_an_unchecked_field_is_still_refused() -> None:
    # Not vouched for: a call built as it comes (a text field holding a number), or a checked
    # call's run under a run id that is not text.
    scorer = _scorer(None, 1)
    bad = AgentCall("in", "out", 5)  # type: ignore[arg-type]
    assert (
        asyncio.run(score_call(scorer, bad, "run-1")).error_code == "SCOREWATCH_SCORER_INVALID_RUN"
    )
    checked = AgentCall.of_checked_fields("in", "out", "bot")
    record = asyncio.run(score_call(scorer, checked, 7))  # type: ignore[arg-type]
    assert record.error_code == "SCOREWATCH_SCORER_INVALID_RUN"


def test_a_prepared_run_is_checked_even_when_its_call_was() -> None:
    def prepare(run: ScorerRun) -> ScorerRun:
        run.target = 5  # type: ignore[assignment]
        return run

    scorer = sw.create_scorer(id="prepared", description="d", prepare_run=prepare).generate_score(
        lambda ctx: 1
    )
    call = AgentCall.of_checked_fields("in", "out", "bot")

    record = asyncio.run(score_call(scorer, call, "run-1"))

    assert record.status == "failed"
    assert record.error_code == "SCOREWATCH_SCORER_INVALID_RUN"


def test_a_copy_of_a_checked_call_is_not_vouched_for() -> None:
    call = AgentCall.of_checked_fields("in", "out", "bot")
    assert not dataclasses.replace(call, target="other").fields_checked
    assert not call.with_run_id("r").fields_checked
    assert not call.without_content().fields_checked
    assert not AgentCall.from_dict(call.to_dict()).fields_checked
    assert call == AgentCall("in", "out", "bot")
