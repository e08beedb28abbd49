"""`run_evals` in the reference's wire form (issue 16, items 3 and 6): the same dataset, scorers,
gates and thresholds as tools/reference/record_run_evals.mjs gave the reference's runEvals, with
its recorded results (tests/fixtures/reference/evals/run_evals.json)."""

from __future__ import annotations

from typing import Any

import pytest

import scorewatch as sw
from reference_fixtures import load_reference
from scorewatch.evals import ItemComplete

pytestmark = pytest.mark.unit

REFERENCE = load_reference("evals/run_evals.json")
DATA: list[dict[str, Any]] = REFERENCE["data"]


def echo() -> sw.Scorer:
    return (
        sw.create_scorer(id="echo", description="the output as a number")
        .preprocess(
            lambda ctx: (
                sw.not_scorable("no value")
                if ctx.run.output == "none"
                else {"value": float(ctx.run.output)}
            )
        )
        .generate_score(lambda ctx: ctx.results.preprocess_step_result["value"])
    )


def half() -> sw.Scorer:
    return sw.create_scorer(id="half", description="d").generate_score(lambda ctx: 0.5)


def never() -> sw.Scorer:
    return (
        sw.create_scorer(id="never", description="d")
        .preprocess(lambda ctx: sw.not_scorable())
        .generate_score(lambda ctx: 1)
    )


def gate_one() -> sw.Scorer:
    return sw.create_scorer(id="gate-one", description="d").generate_score(lambda ctx: 1)


def gate_never() -> sw.Scorer:
    return (
        sw.create_scorer(id="gate-never", description="d")
        .preprocess(lambda ctx: sw.not_scorable("n/a"))
        .generate_score(lambda ctx: 1)
    )


def gate_boom() -> sw.Scorer:
    def boom(ctx: sw.StepContext) -> float:
        raise RuntimeError("boom")

    return sw.create_scorer(id="gate-boom", description="d").generate_score(boom)


def echo_target(value: Any) -> Any:
    return value


def configurations() -> dict[str, dict[str, Any]]:
    return {
        "plain": {"scorers": [echo(), half()]},
        "thresholds": {
            "scorers": [
                {"scorer": echo(), "threshold": 0.5},
                sw.ScorerEntry(half(), threshold={"min": 0.4, "max": 0.6}),
                {"scorer": never(), "threshold": 0.9},
            ],
            "gates": [gate_one(), gate_never()],
        },
        "scored": {"scorers": [{"scorer": echo(), "threshold": 0.9}], "gates": [gate_one()]},
        "failed_gate": {
            "scorers": [{"scorer": echo(), "threshold": 0.1}],
            "gates": [gate_one(), gate_boom()],
        },
    }


def test_every_recorded_run_is_exercised() -> None:
    assert set(configurations()) == set(REFERENCE["runs"])


@pytest.mark.parametrize("name", sorted(REFERENCE["runs"]))
async def test_result_wire_form_matches_the_reference(name: str) -> None:
    result = await sw.run_evals(data=DATA, target=echo_target, **configurations()[name])
    assert result.model_dump(mode="json", by_alias=True) == REFERENCE["runs"][name]


async def test_not_scorable_is_counted_and_left_out_of_means() -> None:
    result = await sw.run_evals(data=DATA, target=echo_target, scorers=[echo(), never()])
    assert result.summary.not_scorable == {"echo": 1, "never": 4}
    assert result.scores == {"echo": pytest.approx((0.25 + 0.75 + 1) / 3)}


async def test_on_item_complete_gets_one_object_as_the_reference() -> None:
    seen: list[dict[str, Any]] = []

    def on_item(done: Any) -> None:
        assert isinstance(done, ItemComplete)
        seen.append(
            {
                "keys": sorted(["item", "scorerResults", "targetResult"]),
                "input": done.item["input"],
                "scorerIds": sorted(done.scorer_results),
            }
        )
        assert done.target_result == done.item["input"]

    config = configurations()["thresholds"]
    await sw.run_evals(data=DATA, target=echo_target, on_item_complete=on_item, **config)
    assert sorted(seen, key=lambda s: s["input"]) == sorted(
        REFERENCE["onItemComplete"], key=lambda s: s["input"]
    )


async def test_scorer_runs_carry_the_reference_target_fields() -> None:
    runs: dict[str, dict[str, Any]] = {}

    def watching(scorer: sw.Scorer) -> sw.Scorer:
        def prepare(run: Any) -> Any:
            runs.setdefault(scorer.id, _fields(run))
            return run

        return scorer.copy(prepare_run=prepare)

    config = configurations()["thresholds"]
    scorers = [
        watching(e["scorer"] if isinstance(e, dict) else e.scorer) for e in config["scorers"]
    ]
    gates = [watching(g) for g in config["gates"]]
    await sw.run_evals(data=DATA, target=echo_target, scorers=scorers, gates=gates)
    assert runs == REFERENCE["scorerRuns"]


def _fields(run: Any) -> dict[str, Any]:
    return {
        "targetScope": run.target_scope,
        "targetEntityType": run.target_entity_type,
        "scoreSource": run.score_source,
    }


async def test_entity_type_can_name_a_workflow() -> None:
    seen: list[sw.ScorerRunResult] = []
    result = await sw.run_evals(
        data=DATA[:1],
        target=echo_target,
        scorers=[half()],
        on_item_complete=lambda done: seen.append(done.scorer_results["half"]),
        target_entity_type="workflow_run",
    )
    assert result.scores == {"half": 0.5}
    assert seen[0].target_entity_type == "workflow_run" and seen[0].target_scope == "span"


@pytest.mark.parametrize(
    "entry",
    [
        {"scorer": "not a scorer", "threshold": 0.5},
        {"scorer": None},
        {"scorer": "x", "weight": 2},
    ],
)
async def test_a_bad_mapping_entry_is_refused(entry: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        await sw.run_evals(data=DATA, target=echo_target, scorers=[entry])


async def test_a_mapping_threshold_needs_a_bound() -> None:
    with pytest.raises(sw.ScorewatchError) as raised:
        await sw.run_evals(
            data=DATA, target=echo_target, scorers=[{"scorer": half(), "threshold": {}}]
        )
    assert raised.value.code == "INVALID_SCORER_THRESHOLD"


async def test_run_experiment_reports_not_scorable_as_neither_score_nor_failure() -> None:
    from scorewatch.commands._results_file import outcome_record
    from scorewatch.commands._summary import summarize_records

    records: list[dict[str, Any]] = []

    def keep(outcome: Any) -> None:
        records.append(outcome_record(outcome, DATA[outcome.item_index]))

    result = await sw.run_experiment(
        data=DATA, target=echo_target, scorers=[echo()], on_result=keep
    )
    skipped = [r for item in result.items for r in item.results.values() if r.not_scorable]
    assert len(skipped) == 1 and skipped[0].score is None and skipped[0].error is None
    assert skipped[0].not_scorable == sw.core.NotScorableInfo(step="preprocess", reason="no value")
    assert result.summary.not_scorable == {"echo": 1}
    assert result.summary.scorer_failures == {"echo": 0}
    assert result.scores["echo"] == pytest.approx((0.25 + 0.75 + 1) / 3)
    summary = summarize_records(records)["echo"]
    assert (summary.not_scorable, summary.failures, summary.runs) == (1, 0, 4)
    assert [r["not_scorable"] for r in records if r["not_scorable"]] == [
        {"step": "preprocess", "reason": "no value"}
    ]
