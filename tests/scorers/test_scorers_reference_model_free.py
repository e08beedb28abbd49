"""The model-free scorers against outputs recorded from the reference system itself
(`tests/fixtures/reference/model_free/*.json`, written by
`tools/reference/record_model_free.mjs`): same ids and names, same scores to 1e-9, same step
results. Completeness is the exception: its reference depends on a JS NLP library, so the
test measures how close the documented approximation gets on the recorded set."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorewatch.core import ScorerRunError
from scorewatch.scorers.completeness import coverage, create_completeness_scorer
from scorewatch.scorers.content_similarity import create_content_similarity_scorer
from scorewatch.scorers.keyword_coverage import create_keyword_coverage_scorer
from scorewatch.scorers.textual_difference import create_textual_difference_scorer
from scorewatch.scorers.tone_consistency import (
    _NEGATORS,
    create_tone_consistency_scorer,
    lexicon,
    sentiment,
)
from scorewatch.scorers.tool_call_accuracy_code import create_tool_call_accuracy_code_scorer

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parents[1] / "fixtures" / "reference" / "model_free"

FACTORIES: dict[str, Any] = {
    "textual_difference": create_textual_difference_scorer,
    "content_similarity": create_content_similarity_scorer,
    "keyword_coverage": create_keyword_coverage_scorer,
    "tone": create_tone_consistency_scorer,
    "completeness": create_completeness_scorer,
    "tool_call_accuracy_code": create_tool_call_accuracy_code_scorer,
}
OPTION_NAMES = {
    "ignoreCase": "ignore_case",
    "ignoreWhitespace": "ignore_whitespace",
    "referenceTone": "reference_tone",
    "expectedTool": "expected_tool",
    "expectedToolOrder": "expected_tool_order",
    "strictMode": "strict_mode",
}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text("utf-8"))
    assert data["reference"] == "@mastra/evals@1.10.2"
    return data


def build(name: str, options: dict[str, Any] | None) -> Any:
    given = {OPTION_NAMES[key]: value for key, value in (options or {}).items()}
    return FACTORIES[name](**given)


def assert_close(actual: Any, expected: Any, where: str) -> None:
    """Equal, numbers to 1e-9 (the reference's whole numbers are ints, ours may be floats)."""
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        assert actual == expected, where
    elif isinstance(expected, int | float):
        assert isinstance(actual, int | float) and not isinstance(actual, bool), where
        assert math.isclose(actual, expected, rel_tol=0, abs_tol=1e-9), (where, actual, expected)
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (where, actual)
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_close(a, e, f"{where}[{index}]")
    else:
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), (where, actual)
        for key in expected:
            assert_close(actual[key], expected[key], f"{where}.{key}")


@pytest.mark.parametrize(
    "name",
    [
        "textual_difference",
        "content_similarity",
        "keyword_coverage",
        "tone",
        "tool_call_accuracy_code",
    ],
)
async def test_scores_and_step_results_match_the_reference(name: str) -> None:
    data = load(name)
    scorer = build(name, data["cases"][0]["options"])
    assert (scorer.id, scorer.name) == (data["scorer"]["id"], data["scorer"]["name"])
    assert len(data["cases"]) >= 50
    for case in data["cases"]:
        scorer = build(name, case["options"])
        run = data["runs"][case["run"]]
        expected = case["result"]
        where = f"{name} options={case['options']} run={case['run']}"
        if "error" in expected:  # the reference refused the run
            with pytest.raises(ScorerRunError):
                await scorer.run(run)
            continue
        result = await scorer.run(run)
        assert result.judge is None
        wire = result.model_dump(mode="json", by_alias=True)
        assert_close(wire["score"], expected["score"], f"{where} score")
        assert_close(wire["preprocessStepResult"], expected["preprocessStepResult"], where)
        assert_close(wire.get("analyzeStepResult"), expected["analyzeStepResult"], where)


def test_tone_lexicon_is_the_reference_lexicon() -> None:
    recorded = json.loads((FIXTURES / "tone_lexicon.json").read_text("utf-8"))
    labels = lexicon()
    assert len(labels) == recorded["entries"]
    # The reference sorted its keys by UTF-16 units and wrote them with JSON.stringify.
    pairs = [[key, labels[key]] for key in sorted(labels, key=lambda k: k.encode("utf-16-be"))]
    canonical = json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode("utf-8")).hexdigest() == recorded["sha256OfSortedPairs"]
    assert set(recorded["negators"]) < _NEGATORS
    assert _NEGATORS - set(recorded["negators"]) == {"constructor"}


def test_sentiment_negation_and_tokens() -> None:
    assert sentiment("good") == (3, 3.0)
    assert sentiment("not good") == (-3, -1.5)
    # Punctuation becomes a space; a single tab does not split a token (the reference's rule).
    assert sentiment("good!good") == (6, 3.0)
    assert sentiment("good\tgood") == (0, 0.0)
    assert sentiment("") == (0, 0.0)


def test_completeness_coverage_rule_is_the_reference_rule() -> None:
    """Given the reference's own elements, the coverage is the reference's score exactly."""
    data = load("completeness")
    for case in data["cases"]:
        found = case["result"]["preprocessStepResult"]
        score = coverage(found["inputElements"], found["outputElements"])
        assert math.isclose(score, case["result"]["score"], abs_tol=1e-9), found


def test_coverage_index_agrees_with_pairwise_rule() -> None:
    long_word = "x" * 70
    outputs = ["cat", "abcdefgh", "running", long_word + "yz", "elephants"]
    for element, expected in [
        ("cat", True),  # short: equal only
        ("ca", False),
        ("abcdefg", True),  # inside abcdefgh, 7/8 > 0.6
        ("abcd", False),  # inside, but 4/8 is not > 0.6
        ("runningly", True),  # contains running, 7/9 > 0.6
        ("elephant", True),
        (long_word, True),  # inside a long output, 70/72
        ("x" * 40, False),  # inside, but 40/72
    ]:
        assert coverage([element], outputs) == (1 if expected else 0), element


async def test_completeness_approximation_is_close_to_the_reference() -> None:
    data = load("completeness")
    scorer = create_completeness_scorer()
    assert (scorer.id, scorer.name) == (data["scorer"]["id"], data["scorer"]["name"])
    errors = []
    for case in data["cases"]:
        result = await scorer.run(data["runs"][case["run"]])
        assert sorted(result.preprocess_step_result) == sorted(
            case["result"]["preprocessStepResult"]
        )
        errors.append(abs(result.score - case["result"]["score"]))
    exact = sum(1 for error in errors if error < 1e-9) / len(errors)
    mean = sum(errors) / len(errors)
    # Measured when written: 122/134 equal, mean gap 0.011, largest 0.27.
    assert len(errors) >= 120
    assert exact >= 0.85, exact
    assert mean <= 0.02, mean
    assert max(errors) <= 0.3, max(errors)


def _pairwise_coverage(original: list[str], simplified: list[str]) -> float:
    """The reference's rule as it reads: every input element against every output element."""
    if not original:
        return 1 if not simplified else 0

    def matches(element: str, other: str) -> bool:
        if len(element) <= 3:
            return element == other
        longer, shorter = (element, other) if len(element) > len(other) else (other, element)
        return shorter in longer and len(shorter) / len(longer) > 0.6

    covered = [e for e in original if any(matches(e, s) for s in simplified)]
    return len(covered) / len(original)


@given(
    st.lists(st.text(alphabet="abc\x00", min_size=1, max_size=40), max_size=8),
    st.lists(st.text(alphabet="abc\x00", min_size=1, max_size=40), max_size=8),
)
def test_coverage_equals_the_pairwise_rule(original: list[str], simplified: list[str]) -> None:
    assert coverage(original, simplified) == _pairwise_coverage(original, simplified)


def _only_text(messages: list[dict[str, Any]]) -> str | None:
    if len(messages) != 1 or messages[0]["content"].get("toolInvocations"):
        return None
    parts = messages[0]["content"]["parts"]
    return parts[-1]["text"] if parts and parts[-1]["type"] == "text" else None


@pytest.mark.parametrize(
    "name", ["textual_difference", "content_similarity", "keyword_coverage", "tone"]
)
async def test_plain_and_openai_runs_score_as_the_reference_agent_runs(name: str) -> None:
    """A one-message run gives the reference's number whether it comes as agent messages,
    plain strings or OpenAI-style messages."""
    data = load(name)
    checked = 0
    for case in data["cases"]:
        run = data["runs"][case["run"]]
        question, answer = _only_text(run["input"]["inputMessages"]), _only_text(run["output"])
        if question is None or answer is None:
            continue
        scorer = build(name, case["options"])
        openai_input = [{"role": "system", "content": "s"}, {"role": "user", "content": question}]
        openai_output = [{"role": "assistant", "content": answer}]
        for given_input, given_output in ((question, answer), (openai_input, openai_output)):
            result = await scorer.run(input=given_input, output=given_output)
            assert_close(result.score, case["result"]["score"], f"{name} run={case['run']}")
        checked += 1
    assert checked >= 30
