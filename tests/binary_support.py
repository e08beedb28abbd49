"""External binaries the tests run (prometheus, promtool, chromium...): skipped locally when
missing, a failure under CI. A module of its own, not conftest.py: test folders have conftest.py
files of their own, so `from conftest import ...` would name whichever one loaded last."""

from __future__ import annotations

import os
import shutil

import pytest

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
