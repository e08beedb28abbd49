"""The README's `scorewatch serve` pair of blocks, as a reader runs them in a fresh virtualenv:
the first writes scorewatch.toml and checks it, then (as the text says) `scorewatch serve
--config scorewatch.toml` runs while the second block's `curl` commands score an answer and read
the metric. Only the port differs: a free one instead of 8787, in the file and the commands."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from docs_support import REPO, blocks
from docs_venv import venv_env

pytestmark = pytest.mark.e2e

README = REPO / "README.md"
SERVE = "scorewatch serve --config scorewatch.toml"


def _serve_blocks() -> tuple[str, str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### `scorewatch serve`") : text.index("### `scorewatch eval`")]
    setup, requests = [b.code for b in blocks(README) if b.code.strip() in section]
    assert f"Then `{SERVE}`, and from another shell:" in section
    return setup, requests


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_readme_serve_blocks_score_an_answer(tmp_path: Path, user_venv: Path) -> None:
    setup, requests = _serve_blocks()
    port = _free_port()
    setup, requests = (code.replace(":8787", f":{port}") for code in (setup, requests))
    env = venv_env(user_venv)
    checked = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", setup],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    log = (tmp_path / "serve.log").open("wb")
    served = subprocess.Popen(SERVE.split(), cwd=tmp_path, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert served.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", requests],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        served.terminate()
        served.wait(60)
        log.close()
    assert done.returncode == 0, done.stderr
    assert '"status":"success"' in done.stdout.replace(" ", ""), done.stdout
    assert re.search(
        r'^scorewatch_evaluation_score_count\{.*"completeness".*\} 1\.0$', done.stdout, re.M
    )
    assert served.returncode == 0, (tmp_path / "serve.log").read_text()
