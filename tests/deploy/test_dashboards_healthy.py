"""On a healthy system the dashboards' ratio panels show 0, not "No data".

A real `scorewatch serve` scores live traffic through a judge that never fails; a real
Prometheus scrapes it; every ratio panel's query, as Grafana would send it, must come back with
a value, and the failure and drop ratios must be 0 (their failure counters do not exist yet).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from deploy_support import dashboard_files, expand_variables, panel_targets
from prometheus_support import query, running_prometheus
from scorewatch.testing import LoopbackJudgeServer, Reply
from serve_support import ServeProcess, judge_table, write_config

pytestmark = pytest.mark.e2e

CONFIG = """\
{judge}

[[scorers]]
id = "judged"
factory = "sw_test_scorers:make_judged_scorer"
"""
# (dashboard title, panel title, refId) -> the value a healthy system shows.
HEALTHY = {
    ("Failed-run rate", "A"): 0.0,
    ("Failed-run rate", "B"): 0.0,
    ("Judge error ratio", "A"): 0.0,
    ("Dropped because the queue was full", "A"): 0.0,
    ("Judge share of GenAI tokens", "A"): 1.0,
}
VARIABLES = {"__rate_interval": "30s", "__interval": "2s", "__range": "5m"}


@pytest.fixture
def judge() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(default=Reply('{"score": 0.75}')) as server:
        yield server


def _panel_queries() -> dict[tuple[str, str], str]:
    found = {}
    for path in dashboard_files():
        board: dict[str, Any] = json.loads(path.read_text("utf-8"))
        for panel, target in panel_targets(board):
            key = (panel["title"], target["refId"])
            if key in HEALTHY:
                found[key] = expand_variables(target["expr"], VARIABLES)
    return found


@pytest.mark.needs_binary
def test_ratio_panels_show_zero_on_a_healthy_system(
    prometheus_bin: str, tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    queries = _panel_queries()
    assert set(queries) == set(HEALTHY)
    config = write_config(tmp_path / "serve", CONFIG.format(judge=judge_table(judge.base_url)))
    process = ServeProcess(config, env={"SW_TEST_JUDGE_BASE": judge.base_url})
    try:
        process.wait_listening()
        target = process.url.removeprefix("http://")
        with (
            running_prometheus(prometheus_bin, tmp_path / "prometheus", [target]) as base,
            httpx.Client(base_url=process.url, timeout=30) as client,
        ):
            values: dict[tuple[str, str], float | None] = {}
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                response = client.post(
                    "/v1/scores",
                    params={"wait": "true"},
                    json={"scorers": ["judged"], "input": "q", "output": "a", "target": "t"},
                )
                assert response.json()["results"][0]["status"] == "success", response.text
                values = {}
                for key, expr in queries.items():
                    result = query(base, expr)
                    values[key] = float(result[0]["value"][1]) if result else None
                if values == HEALTHY:
                    break
                time.sleep(1)
            assert values == HEALTHY
    finally:
        process.kill()
