"""A scorer's version fingerprint is the same in another process (another hash seed), and for
the same scorers read again from a configuration file whose options are in another order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scorewatch.commands._eval_scorers import load_scorers
from scorewatch.scorers.registry import build_scorer

pytestmark = pytest.mark.integration

CUSTOM = """
import scorewatch as sw

PROMPT = "Is this answer polite? {output}"


def build():
    return sw.create_scorer(
        id="polite",
        description="politeness",
        judge=sw.JudgeConfig(
            model="openai/gpt-4o-mini",
            instructions="Judge politeness.",
            model_options={"temperature": 0, "seed": 3, "top_p": 1},
        ),
    ).generate_score(
        sw.PromptStep(description="r", create_prompt=lambda c: PROMPT.format(output=c.run.output))
    )
"""

SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from scorewatch.scorers.registry import build_scorer
import custom_scorer
print(custom_scorer.build().version_fingerprint)
model = "openai/gpt-4o-mini"
print(build_scorer("faithfulness", model=model, context=["a", "b"]).version_fingerprint)
print(build_scorer("keyword-coverage").version_fingerprint)
print(build_scorer("rubric", model=model, criteria="Polite; cites a source.").version_fingerprint)
"""


def test_every_process_computes_the_same_fingerprints(tmp_path: Path) -> None:
    (tmp_path / "custom_scorer.py").write_text(CUSTOM, encoding="utf-8")
    outputs = []
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(tmp_path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split())
    assert len(outputs[0]) == 4 and len(set(outputs[0])) == 4
    assert outputs[0] == outputs[1] == outputs[2]
    sys.path.insert(0, str(tmp_path))
    try:
        import custom_scorer  # type: ignore[import-not-found]

        here = custom_scorer.build().version_fingerprint
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("custom_scorer", None)
    assert here == outputs[0][0]
    assert build_scorer("keyword-coverage").version_fingerprint == outputs[0][2]


CONFIG = """
[judge]
model = "openai/gpt-4o-mini"
model_options = {{ {judge_options} }}

[[scorers]]
id = "mentions-refund"
kind = "check-includes"
options = {{ {check_options} }}

[[scorers]]
id = "relevancy"
kind = "answer-relevancy"
options = {{ uncertainty_weight = 0.5 }}
"""


def _fingerprints(path: Path, judge_options: str, check_options: str) -> dict[str, str]:
    path.write_text(
        CONFIG.format(judge_options=judge_options, check_options=check_options), encoding="utf-8"
    )
    found, _gates = load_scorers([], str(path), [], None, {})
    return {scorer_id: scorer.version_fingerprint for scorer_id, scorer in found.by_id.items()}


def test_a_reloaded_configuration_file_gives_the_same_fingerprints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A judged scorer is built only when its key is there (it is never used: nothing is judged).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")
    path = tmp_path / "scorers.toml"
    first = _fingerprints(
        path, "temperature = 0, seed = 1", 'expected = "refund", ignore_case = false'
    )
    again = _fingerprints(
        path, "temperature = 0, seed = 1", 'expected = "refund", ignore_case = false'
    )
    reordered = _fingerprints(
        path, "seed = 1, temperature = 0", 'ignore_case = false, expected = "refund"'
    )
    assert set(first) == {"mentions-refund", "relevancy"}
    assert first == again == reordered
    other_seed = _fingerprints(
        path, "temperature = 0, seed = 2", 'expected = "refund", ignore_case = false'
    )
    assert other_seed["relevancy"] != first["relevancy"]
    assert other_seed["mentions-refund"] == first["mentions-refund"]
