"""Several processes opening one new SQLite file at the same moment, as serve's workers do when
they start together: each must end up with the table, none may fail with `database is locked`
(SQLite refuses a concurrent switch to WAL at once, without its busy timeout)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

# Each process waits for the same instant, then opens the sink (schema set-up included).
_OPEN = """
import sys, time
from scorewatch.sinks import SqliteSink
start = float(sys.argv[2])
time.sleep(max(start - time.time(), 0))
SqliteSink(sys.argv[1]).close()
"""


@pytest.mark.parametrize("round_", range(3))
def test_processes_opening_a_new_file_together_all_succeed(tmp_path: Path, round_: int) -> None:
    path = tmp_path / f"scores-{round_}.db"
    start = str(time.time() + 3.0)  # after every interpreter has started
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN, str(path), start],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(6)
    ]
    failures = [p.communicate(timeout=120)[1] for p in processes if p.wait(timeout=120) != 0]
    assert failures == [], failures[0]
