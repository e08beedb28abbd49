"""Static guarantees of the scorer core: cheap imports and lint (layering:
tests/project/test_layering.py).

mypy --strict on the core runs in `make typecheck` (it takes most of a minute on a busy machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "src" / "scorewatch" / "core"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )


def test_import_scorewatch_does_not_import_litellm() -> None:
    done = _python("import scorewatch, sys; assert 'litellm' not in sys.modules")
    assert done.returncode == 0, done.stderr


def test_running_a_scripted_scorer_never_loads_litellm_or_the_otel_sdk() -> None:
    code = """
import sys
import scorewatch as sw
from scorewatch.testing import ScriptedJudge

judge = ScriptedJudge(['{"score": 0.5}', "fine"])
scorer = (
    sw.create_scorer(id="s", description="d", judge=sw.JudgeConfig(model=judge, instructions="i"))
    .generate_score(sw.PromptStep("s", lambda ctx: "p"))
    .generate_reason(sw.PromptStep("r", lambda ctx: "p"))
)
result = scorer.run_sync(output="o")
assert result.score == 0.5, result
loaded = sorted(m for m in sys.modules if m == "litellm" or m.startswith("opentelemetry.sdk"))
assert not loaded, loaded
print("ok")
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _tool(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    if not candidate.exists():
        pytest.skip(f"{name} is not installed in this environment")
    return str(candidate)


def test_core_is_ruff_clean() -> None:
    ruff = _tool("ruff")
    checked = subprocess.run(
        [ruff, "check", "--no-cache", str(CORE)], capture_output=True, text=True, cwd=ROOT
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    formatted = subprocess.run(
        [ruff, "format", "--check", "--no-cache", str(CORE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_a_litellm_model_id_does_not_import_litellm_until_the_first_call() -> None:
    code = """
import sys
import scorewatch as sw
judge = sw.JudgeConfig(model="openai/gpt-4o-mini", instructions="i")
scorer = sw.create_scorer(id="s", description="d", judge=judge).generate_score(
    sw.PromptStep("s", lambda ctx: "p")
)
assert "litellm" not in sys.modules
print("ok")
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
