"""Fresh virtualenvs with this checkout installed as the docs say, to run their examples in.

A page's install line (`pip install -e .`, `pip install -e '.[traces-example]'`) is run as it is
written, in the repository, by uv's pip (`uv pip install ...`, the same arguments, much faster
than pip), into a new virtualenv of the running interpreter's Python (`UV_PYTHON_DOWNLOADS=never`).
uv's cache makes a second environment take seconds. Without uv the tests that need it skip
locally and fail under CI (the test extra installs it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from binary_support import IN_CI
from docs_support import REPO, blocks

__all__ = ["fresh_venv", "install_line", "readme_install", "uv_binary", "venv_env"]

_INSTALL_TIMEOUT_S = 900


def uv_binary() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(found).exists():
        message = "uv is not installed (the test extra installs it: pip install -e '.[test]')"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return found


def install_line(code: str) -> list[str]:
    """The arguments after `pip install` on the first line of a block (its comment dropped)."""
    first = code.splitlines()[0].split("#", 1)[0].strip()
    words = shlex.split(first)
    assert words[:2] == ["pip", "install"], f"not a pip install line: {first!r}"
    return words[2:]


def readme_install() -> list[str]:
    """The README's install line (`pip install -e .`): the first line of its Install block."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Install") :]
    block = next(b for b in blocks(REPO / "README.md") if b.code.strip() in section)
    return install_line(block.code)


def _uv_env() -> dict[str, str]:
    return {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "VIRTUAL_ENV": ""}


def fresh_venv(root: Path, arguments: list[str]) -> Path:
    """A new virtualenv at `root`, `pip install ARGUMENTS` run in the repository into it."""
    uv = uv_binary()
    env = _uv_env()
    subprocess.run(
        [uv, "venv", "--quiet", "--python", sys.executable, str(root)],
        env=env, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    installed = subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(root / "bin" / "python"), *arguments],
        cwd=REPO, env=env, timeout=_INSTALL_TIMEOUT_S, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-4000:]
    return root


def venv_env(venv: Path) -> dict[str, str]:
    """The environment of a shell in the virtualenv, as a new user has it: its `bin` first on
    PATH, and nothing of the test run's own set-up (no PYTHONPATH, no price-table setting:
    scorewatch must keep litellm offline by itself)."""
    dropped = {"PYTHONPATH", "VIRTUAL_ENV", "LITELLM_LOCAL_MODEL_COST_MAP", "PYTHONWARNINGS"}
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    return env
