"""The README's "Project layout" section lists exactly the folders there are: the repository's
tracked top-level folders, and every folder and top-level module of the package."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "scorewatch"


def _tables() -> list[set[str]]:
    """The names in the first column of each table of the section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Project layout\n") :]
    section = section[: section.index("\n## ", 1)]
    tables: list[set[str]] = []
    for block in re.split(r"\n\s*\n", section):
        rows = [line for line in block.splitlines() if line.startswith("| `")]
        if rows:
            tables.append(
                {name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])}
            )
    return tables


def test_the_repository_folders_are_the_listed_ones() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = {path.split("/", 1)[0] + "/" for path in tracked if "/" in path}
    # Deleted but not yet committed files are still listed by git ls-files.
    folders = {folder for folder in folders if (REPO / folder).is_dir()}
    repository, _package = _tables()
    assert repository == folders


def test_the_package_folders_and_modules_are_the_listed_ones() -> None:
    present = {
        f"{path.name}/" for path in PACKAGE.iterdir() if path.is_dir() and any(path.rglob("*.py"))
    } | {path.name for path in PACKAGE.glob("*.py")}
    _repository, package = _tables()
    assert package == present
