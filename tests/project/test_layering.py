"""The import rule of src/scorewatch/layers.toml, checked on every module of the package.

A module imports its own folder and lower levels; a sibling only when listed; never a `never`
pair. Every folder and top-level module must be described, so a new folder cannot skip the rule.
"""

from __future__ import annotations

import ast
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "scorewatch"
LAYERS = PACKAGE / "layers.toml"


@cache
def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Absolute module names a file imports, relative imports resolved (parsed once per run)."""
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


def unit_of(path: Path) -> str:
    """The folder a module sits in, or the top-level module's own name."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def target_of(module: str, units: set[str]) -> str | None:
    """The described unit a `scorewatch.…` import reaches; names that are no unit are attributes
    of the package root (`from scorewatch import __version__`)."""
    parts = module.split(".")
    if parts[0] != "scorewatch":
        return None
    if len(parts) == 1:
        return "__init__"
    return parts[1] if parts[1] in units else "__init__"


def violations(layers: dict[str, Any]) -> list[str]:
    level_of: dict[str, int] = {}
    siblings: dict[str, set[str]] = {}
    for index, level in enumerate(layers["level"]):
        for unit in level["folders"]:
            assert unit not in level_of, f"{unit} is described twice"
            level_of[unit] = index
        for unit, allowed in level.get("siblings", {}).items():
            siblings[unit] = set(allowed)
    exceptions = {(e["importer"], e["imports"]) for e in layers.get("exception", [])}
    never = [(i, rule["imports"]) for rule in layers.get("never", []) for i in rule["importers"]]

    present = {unit_of(p) for p in PACKAGE.rglob("*.py")}
    problems = [
        f"{unit} is not described in layers.toml" for unit in sorted(present - set(level_of))
    ]
    for path in sorted(PACKAGE.rglob("*.py")):
        me = unit_of(path)
        if me not in level_of:
            continue
        where = path.relative_to(PACKAGE)
        for line, module in imported_modules(path):
            for importer, prefix in never:
                if importer == me and (module == prefix or module.startswith(prefix + ".")):
                    problems.append(f"{where}:{line} imports {module} (never {me} → {prefix})")
            target = target_of(module, set(level_of))
            if target is None or target == me or (me, target) in exceptions:
                continue
            upward = level_of[target] > level_of[me]
            sideways = level_of[target] == level_of[me] and target not in siblings.get(me, set())
            if upward or sideways:
                kind = "a higher level" if upward else "an unlisted sibling"
                problems.append(f"{where}:{line} imports {module} ({kind}: {me} → {target})")
    return problems


def inner_violations(layers: dict[str, Any]) -> list[str]:
    """The `[[inner]]` rule: a folder's sub-packages import only their own and lower ones."""
    problems: list[str] = []
    for rule in layers.get("inner", []):
        folder = rule["folder"]
        level_of = {name: i for i, names in enumerate(rule["levels"]) for name in names}
        root = PACKAGE / folder
        present = {p.name for p in root.iterdir() if (p / "__init__.py").exists()}
        problems += [
            f"{folder}/{name} is not described in layers.toml's [[inner]]"
            for name in sorted(present - set(level_of))
        ]
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).parts
            if len(parts) < 2 or parts[0] not in level_of:
                continue  # the folder's own top-level modules sit above its sub-packages
            me = parts[0]
            for line, module in imported_modules(path):
                names = module.split(".")
                if names[:2] != ["scorewatch", folder] or len(names) < 3:
                    continue
                target = names[2]
                if target in level_of and level_of[target] > level_of[me]:
                    where = path.relative_to(PACKAGE)
                    problems.append(
                        f"{where}:{line} imports {module} (a higher level: {folder}/{me} → "
                        f"{folder}/{target})"
                    )
    return problems


def test_imports_follow_the_described_layers() -> None:
    layers = tomllib.loads(LAYERS.read_text(encoding="utf-8"))
    # The checker must see relative imports, or it would pass by seeing nothing.
    seen = [module for _, module in imported_modules(PACKAGE / "core" / "prompt.py")]
    assert "scorewatch.judge.errors" in seen
    assert violations(layers) == []
    # ...and it must catch a break of each kind: core reaching up, a sibling, a never pair.
    broken = {**layers, "level": [dict(level) for level in layers["level"]]}
    broken["level"][2] = {"folders": ["core", "judge"]}  # judge becomes core's sibling
    del broken["level"][1]
    broken["never"] = [{"importers": ["telemetry"], "imports": "opentelemetry.sdk"}]
    found = "\n".join(violations(broken))
    assert "(an unlisted sibling: core → judge)" in found
    assert "(never telemetry → opentelemetry.sdk)" in found
    broken["level"] = list(reversed(layers["level"]))
    assert "(a higher level: core → judge)" in "\n".join(violations(broken))


def test_sub_packages_follow_their_described_order() -> None:
    layers = tomllib.loads(LAYERS.read_text(encoding="utf-8"))
    assert layers["inner"], "layers.toml describes the sub-packages of at least serve"
    assert inner_violations(layers) == []
    # ...and it must catch one: the same folder described top first, and a missing sub-package.
    broken = {"inner": [{**rule, "levels": rule["levels"][::-1]} for rule in layers["inner"]]}
    assert "(a higher level: server/queue → server/config)" in "\n".join(inner_violations(broken))
    missing = {"inner": [{"folder": "server", "levels": [["config"], ["http"]]}]}
    assert "server/intake is not described" in "\n".join(inner_violations(missing))


def test_the_architecture_page_shows_the_levels_of_layers_toml() -> None:
    """docs/architecture.md's level table names the folders of each level, bottom first, as
    layers.toml orders them: the page cannot drift from the rule the tests enforce."""
    layers = tomllib.loads(LAYERS.read_text(encoding="utf-8"))
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("```text\n level  folders", 1)[1].split("```", 1)[0]
    rows = [line.split() for line in table.splitlines()[2:] if line.strip()]
    shown = {int(row[0]): row[1 : row.index("→") - 1] if "→" in row else row[1:] for row in rows}
    expected = {index: list(level["folders"]) for index, level in enumerate(layers["level"])}
    assert {i: [f for f in folders if f != "→"] for i, folders in shown.items()} == expected
