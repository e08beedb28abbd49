"""Shared test set-up: offline litellm, the marker rule every module follows, and the fixtures
more than one test folder uses (a folder's own fixtures are in its conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from binary_support import require_binary

# Before anything imports litellm: never fetch the model price map from the network.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("OTEL_SDK_DISABLED", "false")


@pytest.fixture
def prometheus_bin() -> str:
    return require_binary("prometheus")


@pytest.fixture
def schema() -> Iterator[str]:
    """A PostgreSQL schema of the test's own, dropped afterwards (server and sink tests)."""
    # Imported here: the unit tests load this file too and need neither.
    import psycopg

    from scale_support import PG_DSN, require_postgres, unique_prefix

    require_postgres()
    name = unique_prefix().replace("-", "_")
    yield name
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'.encode())


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
