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
