"""A scorer's version fingerprint: every input changes it, nothing else does, and it is the same
in every process.

Scorers are written as source files (the fingerprint reads a function's source) and imported
under fresh module names, so one test can hold the before and after of an edit.
"""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path
from typing import Any

import pytest

import scorewatch as sw
from core_support import wire
from deploy_support import load_script
from scorewatch.core import fingerprint as fingerprint_module
from scorewatch.scorers.registry import build_scorer
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

_modules = itertools.count()

BASE = """
import scorewatch as sw
from pydantic import BaseModel

TEMPLATE = "Rate the answer {output} from 0 to 1."
WEIGHT = 0.5


class Verdict(BaseModel):
    ok: bool


def extract(ctx):
    return {"ok": True}


def build(judge=None):
    base = sw.create_scorer(id="quality", description="how good", name="Quality", {create})
    return (
        base.preprocess(extract)
        .analyze(sw.PromptStep(
            description="judge it",
            create_prompt=lambda ctx: TEMPLATE.format(output=ctx.run.output),
            output_schema=Verdict,
            judge={judge},
        ))
        .generate_score(lambda ctx: WEIGHT if ctx.results.analyze_step_result["ok"] else 0.0)
    )
"""
JUDGE = (
    'sw.JudgeConfig(model="openai/gpt-4o-mini", instructions="Be strict.", '
    'model_options={{"temperature": 0, "api_key": "sk-1", "api_base": "http://a"}})'
)


def load(tmp_path: Path, source: str) -> Any:
    """`source` as a fresh module."""
    name = f"fingerprinted_{next(_modules)}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return load_script(path, name)


def fingerprint(
    tmp_path: Path, *, create: str = "", judge: str = JUDGE, edit: tuple[str, str] | None = None
) -> str:
    source = BASE.replace("{create}", create).replace("{judge}", judge.replace("{{", "{"))
    source = source.replace("}}", "}")
    if edit is not None:
        assert edit[0] in source, edit[0]
        source = source.replace(*edit)
    scorer: sw.Scorer = load(tmp_path, source).build()
    return scorer.version_fingerprint


def test_the_same_definition_gives_the_same_fingerprint(tmp_path: Path) -> None:
    first = fingerprint(tmp_path)
    assert len(first) == 12 and int(first, 16) >= 0
    assert fingerprint(tmp_path) == first


@pytest.mark.parametrize(
    ("what", "changes"),
    [
        ("id", {"edit": ('id="quality"', 'id="quality-2"')}),
        ("declared version", {"create": 'version="2"'}),
        ("a function step's code", {"edit": ('return {"ok": True}', 'return {"ok": False}')}),
        ("the kind of a step", {"edit": ("base.preprocess(extract)", "base")}),
        ("the score function", {"edit": ("WEIGHT if", "1.0 if")}),
        ("a module constant it reads", {"edit": ("WEIGHT = 0.5", "WEIGHT = 0.4")}),
        ("the prompt template", {"edit": ("from 0 to 1.", "from 0 to 10.")}),
        ("the prompt builder", {"edit": ("output=ctx.run.output", "output=ctx.run.input")}),
        ("the output schema", {"edit": ("ok: bool", "ok: int")}),
        ("the judge model", {"judge": JUDGE.replace("gpt-4o-mini", "gpt-4o")}),
        ("the instructions", {"judge": JUDGE.replace("Be strict.", "Be lenient.")}),
        ("a sampling option", {"judge": JUDGE.replace('"temperature": 0', '"temperature": 1')}),
        ("a new option", {"judge": JUDGE.replace('"temperature": 0', '"seed": 7')}),
        (
            "the JSON prompt placement",
            {
                "judge": JUDGE.replace(
                    'instructions="Be strict."',
                    'instructions="Be strict.", json_prompt_injection="inline"',
                )
            },
        ),
    ],
)
def test_each_input_changes_the_fingerprint(
    tmp_path: Path, what: str, changes: dict[str, Any]
) -> None:
    assert fingerprint(tmp_path, **changes) != fingerprint(tmp_path), what


@pytest.mark.parametrize(
    ("what", "changes"),
    [
        ("name", {"edit": ('name="Quality"', 'name="Quality scorer"')}),
        (
            "description on the lambda's line",
            {"edit": ('description="how good"', 'description="x"')},
        ),
        ("the step description", {"edit": ('description="judge it"', 'description="grade it"')}),
        ("scale and direction", {"create": 'scale=1, direction="higher_is_better"'}),
        ("the API key", {"judge": JUDGE.replace("sk-1", "sk-2")}),
        ("the endpoint", {"judge": JUDGE.replace("http://a", "http://127.0.0.1:9")}),
        (
            "timeouts and retries",
            {"judge": JUDGE.replace('"api_base"', '"timeout": 5, "max_retries": 0, "api_base"')},
        ),
        (
            "the order of options",
            {
                "judge": JUDGE.replace(
                    '{{"temperature": 0, "api_key": "sk-1", "api_base": "http://a"}}',
                    '{{"api_base": "http://a", "api_key": "sk-1", "temperature": 0}}',
                )
            },
        ),
        ("a comment elsewhere in the module", {"edit": ("WEIGHT = 0.5", "WEIGHT = 0.5  # half")}),
    ],
)
def test_nothing_else_changes_the_fingerprint(
    tmp_path: Path, what: str, changes: dict[str, Any]
) -> None:
    assert fingerprint(tmp_path, **changes) == fingerprint(tmp_path), what


def test_the_judge_on_each_step_counts_and_a_judge_object_by_its_model() -> None:
    def build(judge: ScriptedJudge) -> sw.Scorer:
        return sw.create_scorer(
            id="s", description="d", judge=sw.JudgeConfig(model=judge, instructions="Be fair.")
        ).generate_score(sw.PromptStep(description="score", create_prompt=_prompt))

    same = build(ScriptedJudge(['{"score": 1}'], model_id="judge-a"))
    other_replies = build(ScriptedJudge(['{"score": 0}'], model_id="judge-a"))
    other_model = build(ScriptedJudge(['{"score": 1}'], model_id="judge-b"))
    assert same.version_fingerprint == other_replies.version_fingerprint
    assert same.version_fingerprint != other_model.version_fingerprint


def _prompt(ctx: sw.StepContext) -> str:
    return "Score it."


def test_prebuilt_options_and_the_scorewatch_version_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    default = build_scorer("answer-relevancy", model="openai/gpt-4o-mini")
    keyed = build_scorer(
        "answer-relevancy",
        model="openai/gpt-4o-mini",
        model_options={"api_key": "sk-x", "api_base": "http://127.0.0.1:1/v1", "timeout": 3},
    )
    weighted = build_scorer("answer-relevancy", model="openai/gpt-4o-mini", uncertainty_weight=0.5)
    includes = build_scorer("check-includes", expected="sunny")
    includes_other = build_scorer("check-includes", expected="rainy")
    assert default.version_fingerprint == keyed.version_fingerprint
    assert default.version_fingerprint != weighted.version_fingerprint
    assert includes.version_fingerprint != includes_other.version_fingerprint

    custom = sw.create_scorer(id="s", description="d").generate_score(_prompt_length)
    before = (default.version_fingerprint, custom.version_fingerprint)
    monkeypatch.setattr(fingerprint_module, "__version__", "999.0")
    fresh_default = build_scorer("answer-relevancy", model="openai/gpt-4o-mini")
    fresh_custom = sw.create_scorer(id="s", description="d").generate_score(_prompt_length)
    assert fresh_default.version_fingerprint != before[0]
    assert fresh_custom.version_fingerprint == before[1]


def _prompt_length(ctx: sw.StepContext) -> float:
    return min(1.0, len(str(ctx.run.output)) / 100)


def test_a_copy_with_a_new_id_or_version_is_a_new_version() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(_prompt_length)
    assert scorer.copy(name="other").version_fingerprint == scorer.version_fingerprint
    assert scorer.copy(id="t").version_fingerprint != scorer.version_fingerprint
    renamed = scorer.copy(version="2")
    assert renamed.declared_version == "2"
    assert renamed.version_fingerprint != scorer.version_fingerprint


def test_a_declared_version_must_be_text() -> None:
    with pytest.raises(sw.ScorewatchError, match="version must be a non-empty string"):
        sw.create_scorer(id="s", description="d", version="  ")


async def test_results_carry_the_version_in_their_metadata() -> None:
    scorer = sw.create_scorer(id="s", description="d", version="v3").generate_score(_prompt_length)
    result = await scorer.run(output="text")
    expected = {"scorerVersion": scorer.version_fingerprint, "scorerDeclaredVersion": "v3"}
    assert result.metadata == expected
    assert wire(result)["metadata"] == expected
    # Each result has its own dict: changing one leaves the scorer's and the others' alone.
    result.metadata["scorerVersion"] = "changed"  # type: ignore[index]
    assert (await scorer.run(output="text")).metadata == expected


async def test_a_failed_runs_snapshot_carries_the_version_too() -> None:
    def explode(ctx: sw.StepContext) -> str:
        raise RuntimeError("boom")

    scorer = (
        sw.create_scorer(id="s", description="d")
        .generate_score(_prompt_length)
        .generate_reason(explode)
    )
    with pytest.raises(sw.ScorerRunError) as caught:
        await scorer.run(output="text")
    assert caught.value.result is not None
    assert caught.value.result.metadata == {"scorerVersion": scorer.version_fingerprint}


ONE_LINE = """
from scorewatch import create_scorer as cs
s = cs(id="s", description="{description}").analyze(lambda c: 1).generate_score(lambda c: {score})
"""


def test_a_lambda_counts_by_its_own_text_not_its_line(tmp_path: Path) -> None:
    def one_line(description: str = "d", score: str = "1.0") -> str:
        source = ONE_LINE.format(description=description, score=score)
        return str(load(tmp_path, source).s.version_fingerprint)

    assert one_line(description="another description") == one_line()
    assert one_line(score="0.5") != one_line()
