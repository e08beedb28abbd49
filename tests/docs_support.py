"""Code blocks of the Markdown docs, and a runner that executes one file's Python examples.

`python tests/docs_support.py FILE.md` runs FILE's ```python blocks in order, in one namespace
(later examples may use earlier ones) and one event loop (top-level `await` is allowed), in the
current directory; exit status 1 and the failing block's location and traceback on a failure.
Blocks marked `docs-test: simulated-judge` run with the OpenAI endpoint taken from
`DOCS_TEST_OPENAI_BASE_URL`; blocks marked `docs-test: skip: <reason>` are not run. A line
ending in `# prints: TEXT` promises that the block prints TEXT as a line of its own: the block
fails when its output does not have those lines, in that order.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import os
import re
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SIMULATED_JUDGE_URL_ENV = "DOCS_TEST_OPENAI_BASE_URL"
PLACEHOLDER_KEY = "sk-docs-test-placeholder"
_DIRECTIVE = re.compile(r"docs-test:\s*(skip|simulated-judge|bash)\b:?\s*(.*?)\s*(?:-->)?$")
_FENCE = re.compile(r"^```(\w[\w+-]*)?\s*$")
_PRINTS = re.compile(r"#\s*prints:\s*(.*?)\s*$")


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
        try:
            return f"{self.path.relative_to(REPO)}:{self.line}"
        except ValueError:
            return f"{self.path}:{self.line}"


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(path: Path) -> Iterator[Block]:
    """Every fenced block at the start of a line, with the directive on the line before it
    (an HTML comment) or in a comment inside it."""
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


def python_blocks(path: Path) -> list[Block]:
    return [block for block in blocks(path) if block.language in ("python", "py")]


def promised_output(block: Block) -> list[str]:
    """The lines the block's `# prints: TEXT` comments promise, in order."""
    return [found.group(1) for line in block.code.splitlines() if (found := _PRINTS.search(line))]


class _Tee(io.TextIOBase):
    """Writes through to the real stdout and keeps a copy."""

    def __init__(self, target: Any) -> None:
        self.target, self.copy = target, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return int(self.target.write(text))

    def flush(self) -> None:
        self.target.flush()


def check_promises(block: Block, printed: str) -> None:
    lines = printed.splitlines()
    position = 0
    for expected in promised_output(block):
        try:
            position = lines.index(expected, position) + 1
        except ValueError:
            raise AssertionError(
                f"{block.where}: promised the line {expected!r} (a `# prints:` comment); "
                f"it printed:\n{printed}"
            ) from None


def run_block(block: Block, namespace: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
    code = compile(
        block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        if code.co_flags & inspect.CO_COROUTINE:
            loop.run_until_complete(eval(code, namespace))
        else:
            exec(code, namespace)
    check_promises(block, tee.copy.getvalue())


def _set_openai_endpoint(url: str | None) -> None:
    names = ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY")
    if url is None:
        for name in names:
            os.environ.pop(name, None)
        return
    os.environ["OPENAI_API_BASE"] = url
    os.environ["OPENAI_BASE_URL"] = url
    os.environ["OPENAI_API_KEY"] = PLACEHOLDER_KEY


def run_file(path: Path) -> int:
    """Run the file's examples; 0 when all pass (prints what ran), 1 at the first failure."""
    judge_url = os.environ.get(SIMULATED_JUDGE_URL_ENV)
    _set_openai_endpoint(None)  # only marked examples may reach the (simulated) OpenAI endpoint
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    loop = asyncio.new_event_loop()
    try:
        for block in python_blocks(path):
            if block.directive == "skip":
                print(f"skipped {block.where}: {block.reason}")
                continue
            simulated = block.directive == "simulated-judge"
            if simulated and judge_url is None:
                print(f"FAILED {block.where}: {SIMULATED_JUDGE_URL_ENV} is not set")
                return 1
            _set_openai_endpoint(judge_url if simulated else None)
            try:
                run_block(block, namespace, loop)
            except BaseException:
                print(f"FAILED {block.where}:\n{block.code}\n{traceback.format_exc()}")
                return 1
            finally:
                _set_openai_endpoint(None)
            print(f"ran {block.where}" + (" (simulated judge)" if simulated else ""))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(run_file(Path(sys.argv[1])))
