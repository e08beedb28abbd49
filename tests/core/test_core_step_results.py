"""How the wire form writes the results of steps that return None or a falsy value, against
tests/fixtures/reference/core/step_results.json (tools/reference/record_step_results.mjs).

Python has one "nothing", None, which is JavaScript's null: a step that ran and returned None is
written `null`, as the reference writes a step that returned null; a scorer without the step
leaves the key out, as there. (JavaScript's `undefined`, which the reference leaves out, has no
Python spelling.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import scorewatch as sw
from reference_fixtures import load_reference

pytestmark = pytest.mark.unit

REFERENCE: dict[str, dict[str, Any]] = load_reference("core/step_results.json")
STEP_KEYS = ("preprocessStepResult", "analyzeStepResult", "score", "reason")


def _base() -> sw.Scorer:
    return sw.create_scorer(id="steps", description="d")


# Each Python scorer, and the recorded reference case it must read as.
CASES: dict[str, tuple[str, Callable[[], sw.Scorer]]] = {
    "score_only": ("score_only", lambda: _base().generate_score(lambda c: 1)),
    "preprocess_returns_none": (
        "preprocess_returns_null",
        lambda: _base().preprocess(lambda c: None).generate_score(lambda c: 1),
    ),
    "preprocess_returns_zero": (
        "preprocess_returns_zero",
        lambda: _base().preprocess(lambda c: 0).generate_score(lambda c: 1),
    ),
    "preprocess_returns_empty_text": (
        "preprocess_returns_empty_text",
        lambda: _base().preprocess(lambda c: "").generate_score(lambda c: 1),
    ),
    "preprocess_returns_false": (
        "preprocess_returns_false",
        lambda: _base().preprocess(lambda c: False).generate_score(lambda c: 1),
    ),
    "reason_returns_none": (
        "reason_returns_null",
        lambda: _base().generate_score(lambda c: 1).generate_reason(lambda c: None),
    ),
}


def _keys(wire: dict[str, Any]) -> dict[str, Any]:
    return {key: {"value": wire[key]} if key in wire else "absent" for key in STEP_KEYS}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_step_results_are_written_as_the_reference_writes_them(name: str) -> None:
    recorded, build = CASES[name]
    result = await build().run(input="q", output="a")
    wire = result.model_dump(mode="json", by_alias=True)
    assert _keys(wire) == REFERENCE[recorded]
    # The null survives a round trip through JSON (a stored result reads the same).
    again = sw.ScorerRunResult.model_validate_json(result.model_dump_json(by_alias=True))
    assert _keys(again.model_dump(mode="json", by_alias=True)) == REFERENCE[recorded]


async def test_a_step_returning_none_after_another_keeps_both_keys() -> None:
    scorer = (
        _base().preprocess(lambda c: {"a": 1}).analyze(lambda c: None).generate_score(lambda c: 1)
    )
    wire = (await scorer.run(output="a")).model_dump(mode="json", by_alias=True)
    assert wire["preprocessStepResult"] == {"a": 1}
    assert "analyzeStepResult" in wire and wire["analyzeStepResult"] is None
    # The reference leaves this key out only because its step returned `undefined`.
    assert REFERENCE["analyze_returns_nothing"]["analyzeStepResult"] == "absent"
