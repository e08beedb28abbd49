"""`import scorewatch as sw`: what users reach for first is there, loads its heavy parts only when
first used, and the record types are reached through their sub-packages."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

RECORDS = {
    "core": (
        "JudgeExecutionFailure",
        "JudgeExecutionSuccess",
        "NotScorableInfo",
        "ScorerRunSnapshot",
    ),
    "judge": ("JudgeCost", "JudgeReply", "JudgeRequest", "JudgeUsage"),
}


def _python(code: str) -> str:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_scorewatch_loads_no_heavy_part() -> None:
    code = """
import sys
import scorewatch
heavy = ("litellm", "fastapi", "opentelemetry", "scorewatch.live", "scorewatch.scorers",
         "scorewatch.evals", "scorewatch.telemetry", "scorewatch.server")
print(sorted(m for m in heavy if m in sys.modules))
"""
    assert _python(code) == "[]"


def test_the_first_reach_is_at_the_top_and_loads_on_use() -> None:
    code = """
import scorewatch as sw
from scorewatch.live import LiveScoring
import scorewatch.scorers

assert sw.LiveScoring is LiveScoring
assert sw.scorers is scorewatch.scorers
assert sw.scorers.create_toxicity_scorer is scorewatch.scorers.create_toxicity_scorer
assert callable(sw.create_scorer) and callable(sw.run_evals_sync)
assert all(hasattr(sw, name) for name in sw.__all__), [n for n in sw.__all__ if not hasattr(sw, n)]
print("ok")
"""
    assert _python(code) == "ok"


def test_record_types_live_in_their_sub_packages() -> None:
    import scorewatch as sw

    for package, names in RECORDS.items():
        module = getattr(sw, package)
        for name in names:
            assert name in module.__all__ and hasattr(module, name), (package, name)
            assert name not in sw.__all__ and not hasattr(sw, name), name
