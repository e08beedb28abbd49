"""Each prebuilt scorer's card is declared once, in its module, and everything reads it: the
catalogue (`PREBUILT`), the scorer the factory builds, `scorewatch scorers` and the summary
table of docs/scorers.md."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from scorewatch.commands import scorers as scorers_command
from scorewatch.core import Scorer
from scorewatch.scorers.registry import PREBUILT, ScorerCard, build_scorer, find
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

# What each scorer cannot be built without, found from the catalogue itself.
EXAMPLE_VALUES: dict[str, Any] = {
    "available_tools": {"lookup": "finds an order"},
    "baseline_response": "It ships Monday.",
    "noisy_query": "When does it ship (ignore the weather)?",
    "rubric": "Be right.",
    "criterion": "The assistant stayed polite.",
    "expected": "x",
    "unwanted": "x",
    "pattern": "x+",
    "tool_name": "lookup",
    "limit": 2,
    "expected_order": ["a", "b"],
    "context": ["c"],
}

# Scorers whose built description names what they were configured to check.
DESCRIBED_BY_OPTIONS = {"tool-call-accuracy-code", "trajectory-accuracy-code"}


def _built(name: str) -> Scorer:
    spec = PREBUILT[name]
    options = {option: EXAMPLE_VALUES[option] for option in spec.required_options}
    if spec.one_of_options:
        options[spec.one_of_options[0]] = EXAMPLE_VALUES[spec.one_of_options[0]]
    if name == "tool-call-accuracy-code":
        options["expected_tool"] = "lookup"
    return build_scorer(name, model=ScriptedJudge([]) if spec.needs_model else None, **options)


@pytest.mark.parametrize("name", sorted(PREBUILT))
def test_the_built_scorer_is_the_one_its_card_describes(name: str) -> None:
    card = PREBUILT[name]
    scorer = _built(name)
    assert (scorer.id, scorer.name, scorer.direction) == (card.id, card.scorer_name, card.direction)
    assert scorer.has_judge == (card.judge_calls > 0)
    if name.startswith("check-") or name in DESCRIBED_BY_OPTIONS:
        assert scorer.description and scorer.description != card.description
    else:
        assert scorer.description == card.description
    assert find(card.id) is PREBUILT[name]


def test_the_catalogue_names_each_card_once() -> None:
    ids = [spec.id for spec in PREBUILT.values()]
    assert len(ids) == len(set(ids))
    assert all(PREBUILT[name].name == name for name in PREBUILT)


def test_a_second_factory_under_a_known_name_is_refused() -> None:
    from scorewatch.scorers._card import prebuilt

    card = ScorerCard(name="faithfulness", id="other", scorer_name="Other", description="d")
    before = dict(PREBUILT)
    with pytest.raises(ValueError, match="two prebuilt scorers are named 'faithfulness'"):

        @prebuilt(card)
        def create_other_scorer() -> Scorer:
            raise AssertionError("never built")

    assert before == PREBUILT


def test_the_scorers_command_lists_the_cards(capsys: pytest.CaptureFixture[str]) -> None:
    assert scorers_command.run(argparse.Namespace(format="json")) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(PREBUILT)
    for name, spec in PREBUILT.items():
        row = rows[name]
        assert row["id"] == spec.id
        assert row["description"] == spec.description
        assert row["direction"] == spec.direction
        assert row["judge"] == ("llm" if spec.judge_calls else "none")
        assert row["required_options"] == list(spec.required_options)
        assert row["one_of_options"] == list(spec.one_of_options)


def test_the_docs_summary_table_agrees_with_the_cards() -> None:
    # docs/scorers.md: | `name` | `id` | scorer name | factory | range | direction | judge calls |
    docs = (Path(__file__).parents[2] / "docs" / "scorers.md").read_text(encoding="utf-8")
    rows = {}
    for line in docs.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0].strip("`") in PREBUILT:
            rows[cells[0].strip("`")] = cells
    listed = {name for name in PREBUILT if not name.startswith("check-")}
    assert set(rows) == listed
    for name, (_, id_, _title, factory, _range, direction, calls) in rows.items():
        spec = PREBUILT[name]
        assert id_.strip("`") == spec.id
        assert factory.strip("`") == spec.factory.__name__
        assert direction.strip("*").startswith(spec.direction.split("_")[0])
        assert int(calls) == spec.judge_calls
