"""tools/measure_live_path.py keeps measuring the real live-call path (docs/architecture.md)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

TOOL = Path(__file__).resolve().parents[2] / "tools" / "measure_live_path.py"


def test_the_live_path_reaches_watch_queue_scorer_telemetry_and_the_sqlite_writer(
    tmp_path: Path,
) -> None:
    spec = importlib.util.spec_from_file_location("measure_live_path", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    recorder = asyncio.run(tool.measure(tmp_path))
    for part in (
        "live/watch.py",
        "live/work_queue.py",
        "core/pipeline.py",
        "scorers/keyword_coverage.py",
        "telemetry/listener.py",
        "sinks/sqlite.py",  # runs on the writer thread: threads are profiled too
    ):
        assert part in recorder.files, sorted(recorder.files)
    hops = sum(recorder.edges.values())
    assert len(recorder.edges) <= hops
    assert all(origin != callee for origin, callee in recorder.edges)
