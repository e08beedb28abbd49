"""The prebuilt-scorer registry: names, specs matching the scorers they build, clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import scorewatch.scorers as scorers
from scorewatch.errors import ScorewatchError
from scorewatch.scorers.registry import (
    INVALID_SCORER_OPTIONS,
    PREBUILT,
    UNKNOWN_SCORER,
    build_scorer,
    known_names,
)
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

# The options each scorer cannot be built without (beyond the model).
MINIMAL: dict[str, dict[str, Any]] = {
    "context-precision": {"context": ["c"]},
    "context-recall": {"context": ["c"]},
    "context-relevance": {"context": ["c"]},
    "tool-call-accuracy-llm": {"available_tools": {"t": "a tool"}},
    "noise-sensitivity": {"baseline_response": "b", "noisy_query": "n"},
    "rubric-label": {"rubric": "Be right."},
    "multi-turn-judge": {"criterion": "The assistant stayed polite."},
    "tool-call-accuracy-code": {"expected_tool": "t"},
    "check-includes": {"expected": "x"},
    "check-excludes": {"unwanted": "x"},
    "check-equals": {"expected": "x"},
    "check-matches": {"pattern": "x+"},
    "check-called-tool": {"tool_name": "t"},
    "check-did-not-call": {"tool_name": "t"},
    "check-max-tool-calls": {"limit": 2},
    "check-tool-order": {"expected_order": ["a", "b"]},
}

EXPECTED_NAMES = {
    "summarization", "faithfulness", "hallucination", "answer-relevancy", "answer-similarity",
    "toxicity", "bias", "context-precision", "context-recall", "context-relevance",
    "prompt-alignment", "tool-call-accuracy-llm", "noise-sensitivity", "rubric", "rubric-label",
    "completeness",
    "content-similarity", "keyword-coverage", "textual-difference", "tone-consistency",
    "tool-call-accuracy-code", "check-includes", "check-excludes", "check-equals",
    "check-matches", "check-called-tool", "check-did-not-call", "check-max-tool-calls",
    "check-tool-order", "check-used-no-tools",
    "trajectory-accuracy-llm", "multi-turn-judge", "trajectory-accuracy-code", "trajectory-code",
}  # fmt: skip


def test_the_catalogue_is_complete() -> None:
    assert set(PREBUILT) == EXPECTED_NAMES
    assert known_names() == sorted(EXPECTED_NAMES)
    for name, spec in PREBUILT.items():
        assert spec.name == name
        assert spec.description
        assert (spec.judge_calls > 0) == spec.needs_model


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_each_spec_builds_a_scorer_that_matches_it(name: str) -> None:
    spec = PREBUILT[name]
    model = ScriptedJudge([]) if spec.needs_model else None
    scorer = build_scorer(name, model=model, **MINIMAL.get(name, {}))
    assert scorer.direction == spec.direction
    assert scorer.has_judge == spec.needs_model
    prompt_steps = [s for s in scorer.get_steps() if s["type"] == "prompt"]
    # Each prompt step is one judge call when the replies are well-formed.
    assert len(prompt_steps) == spec.judge_calls
    # The scorer's own id finds the same spec (a Mastra-shaped config names scorers by id).
    assert build_scorer(scorer.id, model=model, **MINIMAL.get(name, {})).id == scorer.id


def test_directions() -> None:
    lower = {name for name, spec in PREBUILT.items() if spec.direction == "lower_is_better"}
    assert lower == {"hallucination", "toxicity", "bias"}


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ScorewatchError) as raised:
        build_scorer("faithfullness")
    assert raised.value.code == UNKNOWN_SCORER
    assert "faithfulness" in str(raised.value) and "completeness" in str(raised.value)


def test_name_spellings() -> None:
    assert build_scorer("content_similarity").id == "content-similarity-scorer"
    assert build_scorer("Completeness-Scorer").id == "completeness-scorer"
    judge = ScriptedJudge([])
    for spelling in ("llm-tool-call-accuracy-scorer", "tool_call_accuracy_llm"):
        scorer = build_scorer(spelling, model=judge, available_tools={"t": "a tool"})
        assert scorer.id == "llm-tool-call-accuracy-scorer"
    for spelling, short in (
        ("llm-trajectory-accuracy-scorer", "trajectory-accuracy-llm"),
        ("code-trajectory-accuracy-scorer", "trajectory-accuracy-code"),
        ("code-trajectory-scorer", "trajectory-code"),
        ("multi-turn-judge-scorer", "multi-turn-judge"),
    ):
        options = MINIMAL.get(short, {})
        assert build_scorer(spelling, model=judge, **options).id == spelling
        assert build_scorer(short, model=judge, **options).id == spelling


async def test_model_free_scorers_ignore_the_model() -> None:
    scorer = build_scorer("check-includes", model="openai/x", model_options=None, expected="hi")
    assert (await scorer.run(input="q", output="hi there")).score == 1.0
    scorer = build_scorer("completeness", model="openai/x", model_options={"api_key": "k"})
    assert scorer.id == "completeness-scorer"


@pytest.mark.parametrize(
    ("name", "options", "fragment"),
    [
        ("faithfulness", {}, "needs a judge model"),
        ("rubric-label", {"model": "openai/x"}, "rubric"),
        ("noise-sensitivity", {"model": "openai/x", "baseline_response": "b"}, "noisy_query"),
        ("context-precision", {"model": "openai/x"}, "context, context_extractor"),
        ("completeness", {"language": "english"}, "language"),
        ("check-includes", {"expected": "x", "bogus": 1}, "bogus"),
    ],
)
def test_option_errors_are_clear(name: str, options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ScorewatchError) as raised:
        build_scorer(name, **options)
    assert raised.value.code == INVALID_SCORER_OPTIONS
    assert fragment in str(raised.value)
    assert name in str(raised.value)


def test_package_exports_every_factory() -> None:
    for spec in PREBUILT.values():
        if spec.name.startswith("check-"):
            assert getattr(scorers.checks, spec.factory.__name__) is spec.factory
        else:
            assert getattr(scorers, spec.factory.__name__) is spec.factory


def test_docs_list_each_llm_scorer_id_and_name() -> None:
    # docs/scorers.md's summary table: | `name` | `id` | scorer name | ...
    docs = (Path(__file__).parents[2] / "docs" / "scorers.md").read_text(encoding="utf-8")
    rows = {}
    for line in docs.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("`") and cells[0].strip("`") in PREBUILT:
            rows[cells[0].strip("`")] = (cells[1].strip("`"), cells[2])
    judge = ScriptedJudge([])
    llm = [name for name, spec in PREBUILT.items() if spec.needs_model]
    for name in llm:
        scorer = build_scorer(name, model=judge, **MINIMAL.get(name, {}))
        listed_id, listed_name = rows[name]
        assert scorer.id == listed_id
        assert listed_name.startswith(scorer.name)


def test_docs_list_each_model_free_scorer_id_and_name() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "scorers.md").read_text(encoding="utf-8")
    rows = {}
    for line in docs.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0].strip("`") in PREBUILT:
            rows[cells[0].strip("`")] = (cells[1].strip("`"), cells[2])
    free = [n for n, spec in PREBUILT.items() if not spec.needs_model and "check-" not in n]
    assert len(free) == 8  # six text and tool scorers, two trajectory scorers
    for name in free:
        scorer = build_scorer(name, **MINIMAL.get(name, {}))
        assert rows[name] == (scorer.id, scorer.name)
