"""Shared helpers for the deploy, alert-rule and dashboard tests (paths, generators, binaries)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
PROMETHEUS_DIR = DEPLOY / "prometheus"
RULES_FILE = PROMETHEUS_DIR / "rules" / "scorewatch.rules.yml"
SHORT_RULES_FILE = ROOT / "src" / "scorewatch" / "demo" / "data" / "short-window.rules.yml"
RULE_TESTS_DIR = PROMETHEUS_DIR / "tests"
GRAFANA = ROOT / "grafana"
RUNBOOKS = ROOT / "docs" / "runbooks"


def load_script(path: Path, name: str) -> ModuleType:
    """Import a stand-alone generator script (deploy/ and grafana/ are not packages)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def rules_generator() -> ModuleType:
    return load_script(PROMETHEUS_DIR / "generate_rules.py", "scorewatch_generate_rules")


def dashboards_generator() -> ModuleType:
    return load_script(GRAFANA / "generate.py", "scorewatch_generate_dashboards")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_yaml_documents(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


# -- Grafana dashboards --------------------------------------------------------------------------

DEFAULT_VARIABLES = {
    "scorer": ".*",
    "target": ".*",
    "model": ".*",
    "pass_threshold": "0.7",
    "__rate_interval": "1m",
    "__interval": "1m",
    "__range": "1h",
}


def expand_variables(expr: str, values: dict[str, str] | None = None) -> str:
    """Substitute Grafana's template variables the way Grafana would before querying."""
    merged = {**DEFAULT_VARIABLES, **(values or {})}
    # Longest names first, so `$__range` is not eaten by a shorter `$__r...`.
    for name in sorted(merged, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", merged[name]).replace("$" + name, merged[name])
    assert "$" not in expr, f"unexpanded variable in {expr!r}"
    return expr


def dashboard_files() -> list[Path]:
    return sorted((GRAFANA / "dashboards").glob("*.json"))


def panel_targets(board: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(panel, target) for every query of every panel, rows included."""
    found = []
    for panel in board.get("panels", []):
        for inner in [panel, *panel.get("panels", [])]:
            for target in inner.get("targets", []):
                found.append((inner, target))
    return found


def variable_queries(board: dict[str, Any]) -> dict[str, str]:
    """Name -> `label_values(...)` query of each query variable."""
    return {
        variable["name"]: variable["query"]
        for variable in board["templating"]["list"]
        if variable["type"] == "query"
    }
