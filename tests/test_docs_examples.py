"""Every ```python block of README.md and docs/**/*.md runs, offline.

The blocks of one file run in order in one namespace (later examples may use earlier ones) and
one event loop (top-level `await` is allowed), in a temporary working directory. A directive on
the line before a block (an HTML comment, invisible on the rendered page) or as a comment inside
it changes how it runs:

- `docs-test: simulated-judge` — the example calls a real model (`openai/...`). It runs as
  written, with the OpenAI endpoint pointed at the simulated judge (a loopback OpenAI-compatible
  server replaying the demo dataset's annotations) and a placeholder key: no key, no network.
- `docs-test: skip: <reason>` — not run (an API synopsis with placeholders, or a long-running
  command). Kept rare: the reason is required and a test bounds their share.

Also checked: the generated telemetry reference in docs/telemetry.md matches the code, and the
README keeps its two quick-start commands.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scorewatch.demo.simulated_judge import SimulatedJudge
from scorewatch.telemetry.reference import BEGIN_MARKER, END_MARKER, render_reference

REPO = Path(__file__).resolve().parents[1]
_DIRECTIVE = re.compile(r"docs-test:\s*(skip|simulated-judge|bash)\b:?\s*(.*?)\s*(?:-->)?$")
_FENCE = re.compile(r"^```(\w[\w+-]*)?\s*$")


@dataclass(frozen=True, slots=True)
class Block:
    path: Path
    line: int
    language: str
    code: str
    directive: str | None
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        language = (opening.group(1) or "").lower()
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].rstrip() != "```":
            body.append(lines[index])
            index += 1
        index += 1  # the closing fence
        directive, reason = None, ""
        candidates = [lines[start - 1]] if start > 0 else []
        candidates += [line for line in body if line.lstrip().startswith("#")]
        for candidate in candidates:
            found = _DIRECTIVE.search(candidate)
            if found:
                directive, reason = found.group(1), found.group(2)
                break
        yield Block(path, start + 1, language, "\n".join(body) + "\n", directive, reason)


def _python_blocks(path: Path) -> list[Block]:
    return [block for block in _blocks(path) if block.language in ("python", "py")]


def _all_python_blocks() -> list[Block]:
    return [block for path in _documents() for block in _python_blocks(path)]


def _files_with_python() -> list[Path]:
    """Files with at least one Python example to run."""
    return [
        path
        for path in _documents()
        if any(block.directive != "skip" for block in _python_blocks(path))
    ]


def _run_block(block: Block, namespace: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
    code = compile(
        block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    if code.co_flags & inspect.CO_COROUTINE:
        loop.run_until_complete(eval(code, namespace))
    else:
        exec(code, namespace)


@pytest.fixture(scope="module")
def simulated_judge() -> Iterator[SimulatedJudge]:
    with SimulatedJudge(latency_s=(0.0, 0.02), seed=3) as judge:
        yield judge


@pytest.mark.parametrize("path", _files_with_python(), ids=lambda path: str(path.relative_to(REPO)))
def test_python_examples_run(
    path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simulated_judge: SimulatedJudge,
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    loop = asyncio.new_event_loop()
    ran = 0
    try:
        for block in _python_blocks(path):
            if block.directive == "skip":
                continue
            with monkeypatch.context() as patch:
                if block.directive == "simulated-judge":
                    # The example names a real OpenAI model; litellm sends it here instead.
                    patch.setenv("OPENAI_API_BASE", simulated_judge.base_url)
                    patch.setenv("OPENAI_BASE_URL", simulated_judge.base_url)
                    patch.setenv("OPENAI_API_KEY", "sk-docs-test-placeholder")
                answered_before = simulated_judge.answered
                try:
                    _run_block(block, namespace, loop)
                except Exception:
                    pytest.fail(
                        f"the example at {block.where} failed:\n{block.code}\n"
                        f"{traceback.format_exc()}"
                    )
                if block.directive == "simulated-judge":
                    # The marker must not hide an example that never reached a judge.
                    assert simulated_judge.answered > answered_before, block.where
            ran += 1
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    assert ran > 0


def test_skipped_examples_are_rare_and_explained() -> None:
    blocks = _all_python_blocks()
    skipped = [block for block in blocks if block.directive == "skip"]
    assert all(block.reason for block in skipped), [b.where for b in skipped if not b.reason]
    assert len(skipped) <= len(blocks) // 4, [block.where for block in skipped]


def test_simulated_judge_examples_really_use_the_judge(simulated_judge: SimulatedJudge) -> None:
    """An example marked simulated-judge must reach it (else the marker hides nothing)."""
    marked = [b for b in _all_python_blocks() if b.directive == "simulated-judge"]
    assert marked, "the README's real-model example should be marked simulated-judge"
    assert all("openai/" in block.code for block in marked), [b.where for b in marked]


def test_bash_examples_marked_to_run_succeed(tmp_path: Path) -> None:
    """```bash blocks marked `docs-test: bash` run (in order, per file) in a temporary folder,
    with the project's virtualenv first on PATH."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    ran = 0
    for path in _documents():
        for block in _blocks(path):
            if block.language not in ("bash", "sh", "shell") or block.directive != "bash":
                continue
            completed = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block.code],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert completed.returncode == 0, (
                f"{block.where} exited {completed.returncode}:\n{block.code}\n"
                f"{completed.stdout}\n{completed.stderr}"
            )
            ran += 1
    assert ran > 0


def test_telemetry_reference_is_in_sync_with_the_code() -> None:
    text = (REPO / "docs" / "telemetry.md").read_text(encoding="utf-8")
    start = text.index(BEGIN_MARKER) + len(BEGIN_MARKER) + 1
    end = text.index(END_MARKER)
    assert text[start:end] == render_reference(), (
        "docs/telemetry.md is out of date: run "
        "`python -m scorewatch.telemetry.reference docs/telemetry.md`"
    )


def test_readme_keeps_the_two_quick_start_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = text[text.index("## Quick start") :]
    first_bash = next(b for b in _blocks(REPO / "README.md") if b.language == "bash")
    assert quick_start.index("make demo") < quick_start.index("make test")
    commands = [line.split("#")[0].strip() for line in first_bash.code.splitlines()]
    assert [command for command in commands if command] == ["make demo", "make test"]


def test_docs_links_point_at_files_that_exist() -> None:
    for path in _documents():
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            assert (path.parent / target).exists(), f"{path.relative_to(REPO)} links {target}"
