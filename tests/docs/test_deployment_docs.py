"""docs/deployment.md's "One process" block, run as written in a fresh virtualenv up to the
`--check` that validates the image's configuration (its last line starts the long-running
service, which writes to the image's volume, /var/lib/scorewatch). The export lines must give
`--check` all it needs: the judge's key and the bearer token the file names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from docs_support import REPO, blocks
from docs_venv import install_line, readme_install, venv_env

pytestmark = pytest.mark.e2e

DOC = REPO / "docs" / "deployment.md"


def _one_process_block() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## One process") : text.index("## Docker Compose")]
    (block,) = [b for b in blocks(DOC) if b.language == "bash" and b.code.strip() in section]
    return block.code


def test_the_one_process_block_checks_the_image_configuration(
    tmp_path: Path, user_venv: Path
) -> None:
    code = _one_process_block()
    assert install_line(code) == readme_install()  # what the fresh virtualenv was made with
    *commands, serve = code.splitlines()[1:]
    assert serve.startswith("scorewatch serve --config deploy/scorewatch.toml --listen ")
    assert "--check" in commands[-1]
    work = tmp_path / "work"
    shutil.copytree(REPO / "deploy", work / "deploy")
    env = venv_env(user_venv)
    for name in ("OPENAI_API_KEY", "SCOREWATCH_TOKEN"):
        env.pop(name, None)  # only what the block exports
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(commands)],
        cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "deploy/scorewatch.toml: OK (3 scorer(s)" in done.stdout
    assert os.listdir(work) == ["deploy"]  # --check wrote nothing
