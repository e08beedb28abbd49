"""The LLM-judged prebuilt scorers against the reference system (@mastra/evals 1.10.2).

Every case in tests/fixtures/reference/llm_scorers/recorded.json was run through the
reference's own scorer with a model that answered with the case's bytes (written in the
reference's answer schema); the fixture holds what the reference returned. Here the same bytes
go through scorewatch's scorer: same id, name, score, step results and number of judge calls.
Regenerate with tools/reference/record_llm_scorers.mjs (see tools/reference/README.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from reference_fixtures import load_reference
from scorewatch import ScorerRunError
from scorewatch.core import Scorer
from scorewatch.scorers import (
    create_answer_relevancy_scorer,
    create_answer_similarity_scorer,
    create_bias_scorer,
    create_context_precision_scorer,
    create_context_recall_scorer,
    create_context_relevance_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_noise_sensitivity_scorer,
    create_prompt_alignment_scorer,
    create_rubric_scorer,
    create_summarization_scorer,
    create_tool_call_accuracy_llm_scorer,
    create_toxicity_scorer,
)
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

CASES: list[dict[str, Any]] = load_reference("llm_scorers/recorded.json")

FACTORIES: dict[str, Callable[..., Scorer]] = {
    "answer-relevancy": create_answer_relevancy_scorer,
    "answer-similarity": create_answer_similarity_scorer,
    "bias": create_bias_scorer,
    "context-precision": create_context_precision_scorer,
    "context-recall": create_context_recall_scorer,
    "context-relevance": create_context_relevance_scorer,
    "faithfulness": create_faithfulness_scorer,
    "hallucination": create_hallucination_scorer,
    "noise-sensitivity": create_noise_sensitivity_scorer,
    "prompt-alignment": create_prompt_alignment_scorer,
    "rubric": create_rubric_scorer,
    "summarization": create_summarization_scorer,
    "tool-call-accuracy-llm": create_tool_call_accuracy_llm_scorer,
    "toxicity": create_toxicity_scorer,
}

# The reason is written by the judge (the last scripted answer) except for these scorers,
# whose reason is a function of the verdicts, worded by each system in its own words.
FUNCTION_REASONS = {"rubric"}


def _bytes(answer: Any) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer)


def _scorer(case: dict[str, Any]) -> tuple[Scorer, ScriptedJudge]:
    judge = ScriptedJudge([_bytes(answer) for answer in case["answers"]])
    return FACTORIES[case["scorer"]](judge, **case["py_options"]), judge


def test_every_llm_judged_scorer_is_covered() -> None:
    assert {case["scorer"] for case in CASES} == set(FACTORIES)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
async def test_same_bytes_same_result_as_the_reference(case: dict[str, Any]) -> None:
    expected = case["expected"]
    if case.get("deliberate") == "refused":
        # Deliberate difference (docs/concepts.md): a configuration the reference accepts but
        # that cannot judge what it claims to (no tools to choose from) fails at construction.
        assert "error" not in expected
        with pytest.raises(ValueError, match="at least one tool"):
            _scorer(case)
        return
    scorer, judge = _scorer(case)
    assert (scorer.id, scorer.name) == (expected["id"], expected["name"])
    if case.get("deliberate") == "lenient":
        # Deliberate difference (docs/scorers.md): a verdict without its descriptive field
        # (reason, reasoning) is still a verdict; the reference fails the run after a fallback.
        assert "error" in expected
        result = await scorer.run(case["run"])
        assert result.analyze_step_result == json.loads(_bytes(case["answers"][1]))
        assert result.score == 0.5 and judge.calls == 3
        return
    if "error" in expected:
        with pytest.raises(ScorerRunError):
            await scorer.run(case["run"])
        assert judge.calls == expected["judgeCalls"]
        return
    result = await scorer.run(case["run"])
    for probe, seen in expected.get("probes", {}).items():
        # A fact of what the judge is shown (a blank context piece keeps its number, a ground
        # truth object is compact JSON, a numeric tool name reads as JavaScript prints it).
        assert any(probe in request.prompt for request in judge.requests) is seen, probe
    if case.get("deliberate") == "trimmed_label":
        # Deliberate difference (docs/concepts.md): every verdict label is read trimmed (a
        # byte-order mark is trimmed, as JavaScript's trim does) and lower-cased; the
        # reference's faithfulness compares it exactly.
        assert result.analyze_step_result == expected["analyzeStepResult"]
        assert expected["score"] == 0.5 and result.score == 1
        return
    assert result.preprocess_step_result == expected["preprocessStepResult"]
    assert result.analyze_step_result == expected["analyzeStepResult"]
    wire = result.model_dump(mode="json", by_alias=True)
    assert wire.get("preprocessStepResult") == expected["preprocessStepResult"]
    assert wire["analyzeStepResult"] == expected["analyzeStepResult"]
    if case.get("deliberate") == "not_scorable":
        # Deliberate difference (docs/scorers.md): nothing to judge is not a maximal score.
        assert result.score is None
        assert result.not_scorable is not None
        assert result.not_scorable.step == "generate_score"
        assert result.reason is None
        assert judge.calls == expected["judgeCalls"] - 1  # no reason to ask for
        return
    assert judge.calls == expected["judgeCalls"]
    assert result.score == expected["score"]
    if case["scorer"] not in FUNCTION_REASONS:
        assert result.reason == expected["reason"]
