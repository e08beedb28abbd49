"""Shared test set-up: offline litellm, and the rule for tests that need external binaries."""

from __future__ import annotations

import os
import shutil

import pytest

# Before anything imports litellm: never fetch the model price map from the network.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_binary(name: str) -> str:
    """The binary's path; skips locally when it is missing, fails under CI (CI=true)."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (Debian package; .ci/run installs it)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def prometheus_bin() -> str:
    return require_binary("prometheus")


KINDS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test module says what it needs, so `pytest -m unit` stays fast as tests are added."""
    wrong: dict[str, list[str]] = {}
    for item in items:
        module = item.getparent(pytest.Module)
        if module is None:
            continue
        kinds = sorted({mark.name for mark in module.iter_markers() if mark.name in KINDS})
        if len(kinds) != 1:
            wrong[module.nodeid] = kinds
    if wrong:
        lines = [f"{nodeid}: {', '.join(kinds) or 'no marker'}" for nodeid, kinds in wrong.items()]
        raise pytest.UsageError(
            "each test module needs exactly one of `pytestmark = pytest.mark.unit`, "
            "`pytest.mark.integration` or `pytest.mark.e2e` (see pyproject.toml):\n  "
            + "\n  ".join(sorted(lines))
        )
