"""Static guarantees of the scorer core: cheap imports, layering, lint.

mypy --strict on the core runs in `make typecheck` (it takes most of a minute on a busy machine).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "src" / "scorewatch" / "core"
# Layering rule: core may import only the shared errors module and the judge boundary.
CORE_MAY_IMPORT = {"errors", "judge"}


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


def _scorewatch_imports(path: Path) -> set[str]:
    """Top-level scorewatch packages/modules a core module imports (relative or absolute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 2 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 2:
                found.update(alias.name for alias in node.names)
            elif node.level > 2:
                found.add("<beyond the package>")
            elif node.level == 0 and node.module and node.module.startswith("scorewatch."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("scorewatch."):
                    found.add(alias.name.split(".")[1])
    return found


def _third_party_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_imports_only_layers_above_it(module: Path) -> None:
    assert _scorewatch_imports(module) <= CORE_MAY_IMPORT
    assert not any(name.startswith("opentelemetry") for name in _third_party_imports(module))


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
