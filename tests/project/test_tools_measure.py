"""tools/measure_live_path.py keeps measuring the real live-call path (docs/architecture.md)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.integration

TOOL = Path(__file__).resolve().parents[2] / "tools" / "measure_live_path.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("measure_live_path", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "in-an-agent-span"])
def test_the_live_path_reaches_watch_queue_scorer_telemetry_and_the_sqlite_writer(
    tmp_path: Path, traced: bool
) -> None:
    recorder = asyncio.run(_tool().measure(tmp_path, traced=traced))
    for part in (
        "live/scoring.py",  # the watch wrapper
        "live/engine.py",
        "live/work_queue.py",
        "core/pipeline.py",
        "scorers/keyword_coverage.py",
        "telemetry/listener.py",
        "sinks/sqlite.py",  # runs on the writer thread: threads are profiled too
    ):
        assert part in recorder.files, sorted(recorder.files)
    # A call with a trace id is sampled by hashing it, which the entry does; without one,
    # the engine draws once per call.
    assert ("live/entry.py" in recorder.files) is traced, sorted(recorder.files)
    hops = sum(recorder.edges.values())
    assert len(recorder.edges) <= hops
    assert all(origin != callee for origin, callee in recorder.edges)


def test_the_judged_path_reaches_the_litellm_judge_over_http(tmp_path: Path) -> None:
    recorder = asyncio.run(_tool().measure(tmp_path, judged=True))
    for part in (
        "core/prompt.py",  # the prompt step
        "judge/litellm_judge.py",  # the production judge, over real HTTP
        "telemetry/judge_calls.py",  # the chat span and judge metrics
        "sinks/sqlite.py",
    ):
        assert part in recorder.files, sorted(recorder.files)
    # The loopback server's thread started before profiling: only the client side counts.
    assert "testing/judge_server.py" not in recorder.files
