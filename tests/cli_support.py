"""Running the `scorewatch` command line in a subprocess, on this checkout's sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["PYTHONPATH", "ROOT", "scorewatch", "write_jsonl"]

ROOT = Path(__file__).resolve().parents[1]
# This checkout's sources first (not whichever copy the virtualenv installed), and the repository
# root so that `tests.cli_scorers:...` imports.
PYTHONPATH = os.pathsep.join([str(ROOT / "src"), str(ROOT)])


def scorewatch(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> Any:
    full_env = {**os.environ, "PYTHONPATH": PYTHONPATH, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "scorewatch", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=ROOT,
    )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
