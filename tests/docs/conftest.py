"""Fixtures of the docs tests: the fresh virtualenv the examples run in."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_venv import fresh_venv, readme_install


@pytest.fixture(scope="session")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with scorewatch installed as the README says."""
    arguments = readme_install()
    assert arguments == ["-e", "."]
    return fresh_venv(tmp_path_factory.mktemp("docs-venv") / "venv", arguments)
