"""Every ```python block of README.md and docs/**/*.md runs, offline, as a new user runs it.

The examples run in a fresh virtualenv with the checkout installed as the README's Install
section says (`pip install -e .`, run by uv: tests/docs_venv.py), with none of the test run's
own set-up (no PYTHONPATH, no LITELLM_LOCAL_MODEL_COST_MAP). Each file's examples run in a fresh
interpreter (`tests/docs_support.py FILE`), as a reader would paste them: in order, in one
namespace (later examples may use earlier ones) and one event loop (top-level `await` is
allowed, and such a block says how to run it), in a temporary working directory, and print
nothing on stderr: no warning, no traceback, not even at exit. A directive on the line before a
block (an HTML comment, invisible on the rendered page) or as a comment inside it changes how it
runs:

- `docs-test: simulated-judge` — the example calls a real model (`openai/...`). It runs as
  written, with the OpenAI endpoint pointed at the simulated judge (a loopback OpenAI-compatible
  server replaying the demo dataset's annotations) and a placeholder key: no key, no network.
- `docs-test: skip: <reason>` — not run (an API synopsis with placeholders, or a long-running
  command). Kept rare: the reason is required and a test bounds their share.
- `docs-test: bash` on a ```bash block — run by bash, with the virtualenv first on PATH; its
  stderr holds no traceback and no warning.

Also checked: the generated telemetry reference in docs/telemetry.md matches the code, the
README keeps its two quick-start commands, and relative links point at files that exist.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docs_support import (
    REPO,
    SIMULATED_JUDGE_URL_ENV,
    Block,
    blocks,
    documents,
    promised_output,
    python_blocks,
)
from docs_venv import venv_env
from scorewatch.demo.simulated_judge import SimulatedJudge
from scorewatch.telemetry import names

pytestmark = pytest.mark.e2e

RUNNER = Path(__file__).resolve().parents[1] / "docs_support.py"
REFERENCE_TOOL = REPO / "tools" / "telemetry_reference.py"


def _reference_tool() -> Any:
    """tools/telemetry_reference.py, the generator of docs/telemetry.md's reference section (a
    repository tool, not part of the package)."""
    spec = importlib.util.spec_from_file_location("telemetry_reference", REFERENCE_TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = tool  # its dataclasses look their module up there
    spec.loader.exec_module(tool)
    return tool


def _all_python_blocks() -> list[Block]:
    return [block for path in documents() for block in python_blocks(path)]


def _files_with_python() -> list[Path]:
    """Files with at least one Python example to run."""
    return [
        path
        for path in documents()
        if any(block.directive != "skip" for block in python_blocks(path))
    ]


# What must never reach a user's terminal from an example.
NOISE = re.compile(r"Traceback|Exception ignored|Unclosed|WARNING|Warning:|cost map", re.I)


@pytest.fixture(scope="module")
def simulated_judge() -> Iterator[SimulatedJudge]:
    with SimulatedJudge(latency_s=(0.0, 0.02), seed=3) as judge:
        yield judge


@pytest.mark.parametrize("path", _files_with_python(), ids=lambda path: str(path.relative_to(REPO)))
def test_python_examples_run(
    path: Path, tmp_path: Path, simulated_judge: SimulatedJudge, user_venv: Path
) -> None:
    marked = [b for b in python_blocks(path) if b.directive == "simulated-judge"]
    answered_before = simulated_judge.answered
    completed = subprocess.run(
        [str(user_venv / "bin" / "python"), str(RUNNER), str(path)],
        cwd=tmp_path,
        env={**venv_env(user_venv), SIMULATED_JUDGE_URL_ENV: simulated_judge.base_url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = completed.stdout + completed.stderr
    assert completed.returncode == 0, report
    ran = re.findall(r"^ran ", completed.stdout, re.M)
    assert len(ran) == sum(1 for b in python_blocks(path) if b.directive != "skip"), report
    assert completed.stderr == "", completed.stderr[-4000:]
    if marked:
        # The marker must not hide an example that never reached a judge.
        assert simulated_judge.answered > answered_before, report


def test_skipped_examples_are_rare_and_explained() -> None:
    examples = _all_python_blocks()
    skipped = [block for block in examples if block.directive == "skip"]
    assert all(block.reason for block in skipped), [b.where for b in skipped if not b.reason]
    assert len(skipped) <= len(examples) // 4, [block.where for block in skipped]


def test_real_model_examples_are_marked() -> None:
    """The README shows a real model; marked examples name an OpenAI model (what the endpoint
    swap redirects)."""
    marked = [b for b in _all_python_blocks() if b.directive == "simulated-judge"]
    assert marked, "the README's real-model example should be marked simulated-judge"
    assert all("openai/" in block.code for block in marked), [b.where for b in marked]


# Every marked block of every file runs here, each a few CLI starts (litellm's import is seconds
# on a loaded machine): the suite's 120 s default is too short for their sum.
@pytest.mark.timeout(600)
def test_bash_examples_marked_to_run_succeed(tmp_path: Path, user_venv: Path) -> None:
    """```bash blocks marked `docs-test: bash` run (in order, per file) in a temporary folder,
    with the fresh virtualenv first on PATH."""
    env = venv_env(user_venv)
    ran = 0
    for path in documents():
        for block in blocks(path):
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
            assert not NOISE.search(completed.stderr), f"{block.where}:\n{completed.stderr}"
            ran += 1
    assert ran > 0


def test_telemetry_reference_is_in_sync_with_the_code() -> None:
    tool = _reference_tool()
    text = (REPO / "docs" / "telemetry.md").read_text(encoding="utf-8")
    start = text.index(tool.BEGIN_MARKER) + len(tool.BEGIN_MARKER) + 1
    end = text.index(tool.END_MARKER)
    assert text[start:end] == tool.render_reference(), (
        "docs/telemetry.md is out of date: run "
        "`python tools/telemetry_reference.py docs/telemetry.md`"
    )


def test_telemetry_reference_tool_rewrites_only_its_section(tmp_path: Path) -> None:
    """The command the message above names, run as a contributor runs it: a stale section is
    replaced, the hand-written text around it is kept."""
    tool = _reference_tool()
    original = (REPO / "docs" / "telemetry.md").read_text(encoding="utf-8")
    start = original.index(tool.BEGIN_MARKER) + len(tool.BEGIN_MARKER) + 1
    end = original.index(tool.END_MARKER)
    document = tmp_path / "telemetry.md"
    document.write_text(original[:start] + "stale\n" + original[end:], encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(REFERENCE_TOOL), str(document)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert document.read_text(encoding="utf-8") == original


def test_telemetry_reference_refuses_an_undocumented_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(names, "ATTR_SOMETHING_NEW", "scorewatch.something_new", raising=False)
    monkeypatch.setattr(names, "__all__", [*names.__all__, "ATTR_SOMETHING_NEW"])
    with pytest.raises(ValueError, match="ATTR_SOMETHING_NEW"):
        _reference_tool().render_reference()


def test_readme_keeps_the_two_quick_start_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = text[text.index("## Quick start") :]
    first_bash = next(b for b in blocks(REPO / "README.md") if b.language == "bash")
    assert quick_start.index("make demo") < quick_start.index("make test")
    commands = [line.split("#")[0].strip() for line in first_bash.code.splitlines()]
    assert [command for command in commands if command] == ["make demo", "make test"]


def test_docs_links_point_at_files_that_exist() -> None:
    for path in documents():
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            assert (path.parent / target).exists(), f"{path.relative_to(REPO)} links {target}"


def test_printed_output_is_checked_against_prints_comments(tmp_path: Path) -> None:
    """A `# prints: TEXT` comment is a promise the runner checks (the README's examples say
    what they print, and must keep saying the truth)."""
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(6 * 7)   # prints: 42\n```\n", encoding="utf-8")
    kept = subprocess.run(
        [sys.executable, str(RUNNER), str(page)], capture_output=True, text=True, timeout=60
    )
    assert kept.returncode == 0, kept.stdout + kept.stderr
    page.write_text("```python\nprint(6 * 7)   # prints: 43\n```\n", encoding="utf-8")
    broken = subprocess.run(
        [sys.executable, str(RUNNER), str(page)], capture_output=True, text=True, timeout=60
    )
    assert broken.returncode == 1 and "promised the line '43'" in broken.stdout


def test_readme_examples_say_what_they_print() -> None:
    """The first example and the LiveScoring one promise their exact output (so both are
    deterministic)."""
    examples = python_blocks(REPO / "README.md")
    assert promised_output(examples[0]) == ["1.0 Score: 1.0. Response has 12 words."]
    live = next(block for block in examples if "LiveScoring(" in block.code)
    assert promised_output(live) == ["{'sampled': 2, 'scored': 2}"]


def test_docs_mention_no_file_outside_the_repository() -> None:
    """A path a page names (`dir/file.ext`) is in this repository, relative to the root or the
    page; no absolute paths into someone's machine; links never leave the repository."""
    named = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.(?:md|py|toml|ya?ml|json|jsonl|txt|m?js|sh))`")
    for path in documents():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(REPO)
        for found in named.finditer(text):
            name = found.group(1)
            assert (REPO / name).exists() or (path.parent / name).exists(), (where, name)
        for absolute in ("/work/", "/home/", "/Users/", "node_modules"):
            assert absolute not in text, (where, absolute)
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not re.match(r"[a-z]+:", target):
                resolved = (path.parent / target).resolve()
                assert resolved.is_relative_to(REPO), (where, target)


def test_the_evaluation_page_covers_run_evals_eval_report_and_compare() -> None:
    page = REPO / "docs" / "evaluation.md"
    code = "".join(block.code for block in blocks(page) if block.directive != "skip")
    for used in ("run_evals_sync(", "run_experiment_sync(", "scorewatch eval ", "--scorers ",
                 "scorewatch report ", "report --compare", "compare_records("):  # fmt: skip
        assert used in code, used
    assert "docs/evaluation.md" in (REPO / "README.md").read_text(encoding="utf-8")


def _awaits_at_top_level(code: str) -> bool:
    """Whether the block awaits outside any function (so it needs an event loop to paste in)."""
    found = False

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
            return None

        def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
            return None

        def visit_Lambda(self, node: ast.Lambda) -> None:
            return None

        def generic_visit(self, node: ast.AST) -> None:
            nonlocal found
            found = found or isinstance(node, ast.Await | ast.AsyncWith | ast.AsyncFor)
            super().generic_visit(node)

    Visitor().visit(ast.parse(code))
    return found


def test_top_level_await_examples_say_how_to_run_them() -> None:
    """Pasted into a script, `await` outside a function is a SyntaxError: such a block says
    where it runs as written (`python -m asyncio`, a notebook) and what a script does instead."""
    awaiting = [block for block in _all_python_blocks() if _awaits_at_top_level(block.code)]
    assert awaiting, "the detector found none: it is broken"
    unexplained = [
        block.where
        for block in awaiting
        if "python -m asyncio" not in block.code or "asyncio.run(" not in block.code
    ]
    assert unexplained == []
