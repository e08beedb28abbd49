"""The trajectory scorers and the multi-turn judge against the reference system
(@mastra/evals 1.10.2).

Every case in tests/fixtures/reference/trajectory/recorded.json was run through the reference's
own scorer (trajectory-typed scorers got `extractTrajectory(messages)`, as the reference's eval
runner gives them; LLM-judged ones a model answering with the case's bytes). Here the same run
goes to scorewatch's scorer as it is (the messages, not a pre-extracted trajectory): same id,
name, score, step results (wire form too) and number of judge calls, or a failed run where the
reference failed. Regenerate with tools/reference/record_trajectory_scorers.mjs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from reference_fixtures import load_case_inputs, load_reference, stable_wire
from scorewatch import ScorerRunError
from scorewatch.core import Scorer
from scorewatch.scorers import (
    create_multi_turn_judge_scorer,
    create_trajectory_accuracy_code_scorer,
    create_trajectory_accuracy_llm_scorer,
    create_trajectory_code_scorer,
)
from scorewatch.scorers.trajectory_accuracy_code import NO_EXPECTATION
from scorewatch.scorers.utils import js_json
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

CASES: list[dict[str, Any]] = load_reference("trajectory/recorded.json")
# The scorer options and runs as the cases file writes them (`2.0` stays a float).
INPUTS = load_case_inputs("trajectory_cases.json")

FACTORIES: dict[str, Callable[..., Scorer]] = {
    "trajectory-accuracy-code": create_trajectory_accuracy_code_scorer,
    "trajectory-code": create_trajectory_code_scorer,
    "trajectory-accuracy-llm": create_trajectory_accuracy_llm_scorer,
    "multi-turn-judge": create_multi_turn_judge_scorer,
}

# Reasons built by a function from the measurements: each system words its own.
FUNCTION_REASONS = {"trajectory-code", "multi-turn-judge"}


def _bytes(answer: Any) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer)


def _scorer(case: dict[str, Any]) -> tuple[Scorer, ScriptedJudge]:
    judge = ScriptedJudge([_bytes(answer) for answer in case.get("answers", [])])
    factory = FACTORIES[case["scorer"]]
    options = INPUTS[case["name"]]["py_options"]
    if "answers" in case:
        return factory(judge, **options), judge
    return factory(**options), judge


def _comparable(step_result: Any) -> Any:
    """A step result as the fixture holds it (numbers as JavaScript writes them: `3.0` is `3`);
    the words of the no-expectation error are ours."""
    stable = json.loads(js_json(stable_wire(step_result)))
    if isinstance(stable, dict) and "error" in stable:
        assert stable["error"] == NO_EXPECTATION
        stable = {**stable, "error": "(words differ)"}
    return stable


def test_every_scorer_is_covered() -> None:
    assert {case["scorer"] for case in CASES} == set(FACTORIES)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
async def test_same_run_same_result_as_the_reference(case: dict[str, Any]) -> None:
    expected = case["expected"]
    if case.get("deliberate") == "refused":
        # Deliberate difference (docs/concepts.md): an expectation that can only mislead (a
        # null budget, a null expected value that never matches, an unknown ordering) fails
        # when the scorer is built, naming what is wrong.
        with pytest.raises(ValueError) as refused:
            _scorer(case)
        assert refused.value.args[0]
        return
    scorer, judge = _scorer(case)
    assert (scorer.id, scorer.name, scorer.type) == (
        expected["id"],
        expected["name"],
        expected["type"],
    )
    if "error" in expected or case.get("deliberate") == "run_refused":
        # A run_refused case is the same mistake in a run's expectation: the run fails,
        # naming it, where the reference silently scores it.
        assert ("error" in expected) != (case.get("deliberate") == "run_refused")
        with pytest.raises(ScorerRunError):
            await scorer.run(INPUTS[case["name"]]["run"])
        assert judge.calls == expected["judgeCalls"]
        return
    result = await scorer.run(INPUTS[case["name"]]["run"])
    for probe, seen in expected.get("probes", {}).items():
        shown = any(probe in request.prompt for request in judge.requests)
        if case.get("deliberate") == "reads_more_shapes":
            # Deliberate difference (docs/concepts.md): the multi-turn judge reads turns from
            # shapes the reference's cannot read (it is shown an empty conversation).
            assert (seen, shown) == (False, True), probe
        else:
            assert shown is seen, probe
    wire = result.model_dump(mode="json", by_alias=True)
    want_preprocess = expected["preprocessStepResult"]
    if isinstance(want_preprocess, dict) and "error" in want_preprocess:
        want_preprocess = {**want_preprocess, "error": "(words differ)"}
    assert _comparable(result.preprocess_step_result) == want_preprocess
    assert _comparable(wire.get("preprocessStepResult")) == want_preprocess
    assert result.analyze_step_result == expected["analyzeStepResult"]
    assert wire.get("analyzeStepResult") == expected["analyzeStepResult"]
    assert result.score == expected["score"]
    assert judge.calls == expected["judgeCalls"]
    if case["scorer"] in FUNCTION_REASONS:
        assert (result.reason is None) == (expected["reason"] is None)
    else:
        assert result.reason == expected["reason"]
