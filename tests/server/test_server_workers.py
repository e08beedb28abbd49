"""`scorewatch serve --workers 2`: two real worker processes on one port, read as one service:
traffic spread over both, /metrics and the final accounting summed, /readyz over both,
SIGTERM stopping every process with nothing accepted lost."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from serve_support import ServeProcess, run_serve, sqlite_rows, write_config

pytestmark = pytest.mark.e2e

CONFIG = """\
[server]
log_level = "warning"
shutdown_timeout = 30

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[sinks]
sqlite = "scores.db"
"""

_WORKER_STOPPED = re.compile(r"worker (\d+) \(pid (\d+)\) stopped; accounting (\{.*\})")
_PIDS = re.compile(r"scorewatch serve: 2 workers, pids (\d+), (\d+)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    status = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def _worker_pids(process: ServeProcess) -> list[int]:
    found = _PIDS.search(process.stderr())
    assert found, process.stderr()
    return [int(found.group(1)), int(found.group(2))]


def _decisions(text: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == "scorewatch_live_decisions_total"
                and sample.labels["scorewatch_decision"] == "sampled"
            ):
                total += sample.value
    return total


def _post_all(url: str, count: int) -> list[int]:
    def post(i: int) -> int:
        # A connection per request: the kernel hands each to whichever worker accepts first.
        body = {"input": f"question {i}", "output": "x" * (i % 50), "target": "bot"}
        # A loaded machine makes serve shed load (429, loop lag): retried as a client would.
        for _attempt in range(100):
            with httpx.Client(base_url=url, timeout=30) as client:
                status = client.post("/v1/scores", json=body).status_code
            if status != 429:
                return status
            time.sleep(0.2)
        return status

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(post, range(count)))


def test_two_workers_share_the_port_and_add_up(tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG)
    process = ServeProcess(config, extra_args=("--workers", "2"))
    try:
        url = process.wait_listening()
        pids = _worker_pids(process)
        assert process.pid not in pids and all(_alive(pid) for pid in pids)

        statuses = _post_all(url, 120)
        assert statuses == [202] * 120

        ready = httpx.get(f"{url}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        checks = ready.json()["checks"]
        # The answering worker's own checks, and the other one as `worker:<n>`.
        assert {"accepting", "queue", "sink:sqlite"} <= set(checks)
        assert [name for name in checks if name.startswith("worker:")] in (
            ["worker:1"],
            ["worker:2"],
        )

        # Every scrape, whichever worker answers it, counts the decisions of both.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            scraped = [httpx.get(f"{url}/metrics", timeout=10) for _ in range(4)]
            if all(_decisions(s.text) == 120 for s in scraped):
                break
            time.sleep(0.2)
        assert [s.status_code for s in scraped] == [200] * 4
        assert [_decisions(s.text) for s in scraped] == [120.0] * 4

        # OpenMetrics keeps the exemplars of the score histogram's buckets.
        openmetrics = httpx.get(
            f"{url}/metrics", headers={"Accept": "application/openmetrics-text"}, timeout=10
        )
        assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
        assert re.search(
            r'scorewatch_evaluation_score_bucket\{.*\} \d+\.0 # \{span_id="[0-9a-f]{16}",'
            r'trace_id="[0-9a-f]{32}"\}',
            openmetrics.text,
        ), openmetrics.text
        assert openmetrics.text.endswith("# EOF\n")

        # The private peer paths are not on the public port.
        assert httpx.get(f"{url}/_peer/metrics", timeout=10).status_code == 404

        assert process.terminate() == 0
    finally:
        process.kill()
    assert not any(_alive(pid) for pid in pids)

    stderr = process.stderr()
    per_worker = {
        int(m.group(1)): (int(m.group(2)), json.loads(m.group(3)))
        for m in _WORKER_STOPPED.finditer(stderr)
    }
    assert sorted(per_worker) == [1, 2], stderr
    assert sorted(pid for pid, _ in per_worker.values()) == sorted(pids)
    # Both workers took traffic, and the service's line is their sum.
    assert all(stats["sampled"] > 0 for _pid, stats in per_worker.values()), per_worker
    total = process.final_accounting()
    for key, value in total.items():
        assert value == sum(stats[key] for _pid, stats in per_worker.values()), key
    assert total["sampled"] == total["scored"] == 120
    assert total["dropped_shutdown"] == 0
    # Every accepted item stored exactly once, though two processes wrote the one file.
    rows = sqlite_rows(tmp_path / "scores.db")
    assert len(rows) == 120
    assert len({row["runId"] for row in rows}) == 120


def test_workers_stop_when_the_supervisor_is_killed(tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG)
    with ServeProcess(config, extra_args=("--workers", "2")) as process:
        pids = _worker_pids(process)
        os.kill(process.pid, signal.SIGKILL)
        process.process.wait(10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids), process.stderr()
        # They drained as on SIGTERM: each printed its own accounting.
        assert len(_WORKER_STOPPED.findall(process.stderr())) == 2


def test_a_worker_that_dies_stops_the_service(tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG)
    with ServeProcess(config, extra_args=("--workers", "2")) as process:
        first, second = _worker_pids(process)
        os.kill(first, signal.SIGKILL)
        assert process.process.wait(60) == 1
        assert "exited with -9: stopping the others" in process.stderr()
        assert not _alive(second)


def test_one_worker_is_the_plain_single_process(tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG)
    with ServeProcess(config, extra_args=("--workers", "1")) as process:
        assert "workers, pids" not in process.stderr()
        assert "(h11 + uvloop)" in process.stderr()
        assert process.terminate() == 0
    assert "worker 1" not in process.stderr()


def test_the_plain_stack_serves_the_same(tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG.replace("[server]\n", '[server]\nhttp = "h11"\n'))
    with ServeProcess(config) as process:
        assert "(h11 + asyncio)" in process.stderr()
        answer = httpx.post(
            f"{process.url}/v1/scores",
            json={"input": "q", "output": "a", "target": "bot"},
            timeout=10,
        )
        assert answer.status_code == 202
        assert process.terminate() == 0
    assert process.final_accounting()["scored"] == 1


def test_a_configuration_error_found_by_the_workers_exits_2(tmp_path: Path) -> None:
    body = CONFIG.replace("[server]\n", '[server]\nauth_token_env = "SW_TEST_NEVER_SET"\n')
    code, stderr = run_serve(write_config(tmp_path, body), "--workers", "2")
    assert code == 2, stderr
    assert "SW_TEST_NEVER_SET" in stderr
    assert "listening on" not in stderr and "Traceback" not in stderr
