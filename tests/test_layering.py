"""The architecture's import rule: a folder imports only the folders listed above it.

judge → core → scorers → evals → live → telemetry → server → testing; `judge` and `core` never
import the OpenTelemetry SDK (core not even the API). The CLI, its commands and the demo sit on
top and may import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "scorewatch"
ORDER = ["judge", "core", "scorers", "evals", "live", "telemetry", "server", "testing"]
RANK = {name: index for index, name in enumerate(ORDER)}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Absolute module names a file imports, relative imports resolved."""
    package = list(path.relative_to(PACKAGE.parent).parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
                if node.module is None:
                    found.extend((node.lineno, f"{module}.{a.name}") for a in node.names)
                    continue
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return found


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "scorewatch" else None


@pytest.mark.parametrize("layer", ORDER)
def test_layer_imports_only_layers_above(layer: str) -> None:
    problems = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, module in imported_modules(path):
            target = layer_of(module)
            if target in RANK and RANK[target] > RANK[layer]:
                problems.append(f"{path.relative_to(PACKAGE)}:{line} imports {module}")
            if layer in ("judge", "core") and module.startswith("opentelemetry.sdk"):
                problems.append(f"{path.relative_to(PACKAGE)}:{line} imports {module}")
            if layer == "core" and module.startswith("opentelemetry"):
                problems.append(f"{path.relative_to(PACKAGE)}:{line} imports {module}")
    assert problems == []


def test_judge_imports_nothing_of_scorewatch_but_errors() -> None:
    problems = [
        f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        for path in sorted((PACKAGE / "judge").rglob("*.py"))
        for line, module in imported_modules(path)
        if layer_of(module) not in (None, "judge") and module != "scorewatch.errors"
    ]
    assert problems == []


def test_the_checker_sees_relative_imports() -> None:
    modules = [module for _, module in imported_modules(PACKAGE / "core" / "prompt.py")]
    assert "scorewatch.judge.errors" in modules
