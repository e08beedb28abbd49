"""Overload, a judge outage and SIGTERM, against the real server process: nothing accepted is
lost (every accepted run is in the SQLite sink or counted as `dropped_shutdown`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scorewatch.testing import HttpError, LoopbackJudgeServer, Reply
from serve_support import (
    JUDGED_AND_LENGTH_SCORERS,
    ServeProcess,
    judge_table,
    sqlite_rows,
    wait_idle,
    write_config,
)

pytestmark = pytest.mark.e2e

CONFIG = (
    """\
[server]
shutdown_timeout = {shutdown_timeout}
retry_after = 2

{judge}

"""
    + JUDGED_AND_LENGTH_SCORERS
    + """
[live]
max_concurrency = {concurrency}
max_queue = {max_queue}
max_queue_bytes = {max_queue_bytes}

[sinks]
sqlite = "scores.db"
"""
)


def start(
    directory: Path,
    judge: LoopbackJudgeServer,
    *,
    shutdown_timeout: float = 30,
    concurrency: int = 4,
    max_queue: int = 1000,
    max_queue_bytes: int = 256 << 20,
) -> ServeProcess:
    body = CONFIG.format(
        judge=judge_table(judge.base_url),
        shutdown_timeout=shutdown_timeout,
        concurrency=concurrency,
        max_queue=max_queue,
        max_queue_bytes=max_queue_bytes,
    )
    path = write_config(directory, body)
    process = ServeProcess(path, env={"SW_TEST_JUDGE_BASE": judge.base_url})
    process.wait_listening()
    return process


def pair(index: int, scorers: list[str] | None = None) -> dict[str, Any]:
    return {
        "scorers": scorers or ["judged"],
        "input": f"question {index}",
        "output": f"answer {index}",
        "target": "agent",
    }


def check_nothing_lost(process: ServeProcess, accepted_ids: set[str]) -> dict[str, int]:
    accounting = process.final_accounting()
    rows = {row["id"]: row for row in sqlite_rows(process.config.parent / "scores.db")}
    stored = accepted_ids & set(rows)
    assert len(rows) == len(stored), "a row that no request accepted"
    assert accounting["sampled"] == len(accepted_ids)
    assert accounting["queued"] == 0 and accounting["in_flight"] == 0
    assert (
        accounting["scored"] + accounting["failed"] + accounting["dropped_shutdown"]
        == accounting["sampled"]
    )
    # Each accepted run is stored, or counted as given up at shutdown.
    assert len(stored) == accounting["scored"] + accounting["failed"]
    assert len(accepted_ids - stored) == accounting["dropped_shutdown"]
    return accounting


@pytest.fixture
def slow_judge() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(default=Reply('{"score": 0.5}', delay=20.0)) as server:
        yield server


def test_queue_full_answers_429_with_retry_after_and_counts_it(
    tmp_path: Path, slow_judge: LoopbackJudgeServer
) -> None:
    process = start(tmp_path, slow_judge, concurrency=1, max_queue=3, shutdown_timeout=0.5)
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:
            accepted: set[str] = set()
            refusals: list[httpx.Response] = []
            for index in range(12):
                response = client.post("/v1/scores", json=pair(index))
                if response.status_code == 202:
                    accepted.update(a["run_id"] for a in response.json()["accepted"])
                else:
                    refusals.append(response)
            assert 4 <= len(accepted) <= 5  # one running (maybe not yet), three waiting
            assert refusals, "the queue never filled"
            for refusal in refusals:
                assert refusal.status_code == 429
                assert refusal.headers["retry-after"] == "2"
                assert refusal.json()["error"] == "queue_full"
            stats = client.get("/v1/stats").json()
            assert stats["dropped_queue_full"] == len(refusals)
            assert stats["rejected_requests"] == len(refusals)
            assert stats["queued"] == 3
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"]["queue"] is False
            # A model-free scorer needs a slot too: refused whole, nothing half-accepted.
            mixed = client.post("/v1/scores", json=pair(99, ["judged", "length"]))
            assert mixed.status_code == 429
            batch = client.post("/v1/scores:batch", json={"items": [pair(i) for i in range(4)]})
            assert batch.status_code == 413
            assert batch.json()["error"] == "batch_too_large"
            metrics = client.get("/metrics").text
            assert 'scorewatch_decision="dropped_queue_full"' in metrics
        assert process.terminate() == 0
        accounting = check_nothing_lost(process, accepted)
        assert accounting["dropped_shutdown"] == len(accepted)  # the judge never answered
    finally:
        process.kill()


def test_memory_held_by_accepted_items_is_bounded_too(
    tmp_path: Path, slow_judge: LoopbackJudgeServer
) -> None:
    process = start(
        tmp_path, slow_judge, concurrency=1, max_queue_bytes=1 << 20, shutdown_timeout=0.5
    )
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:
            accepted: set[str] = set()
            statuses = []
            for index in range(5):
                body = pair(index) | {"output": "x" * 300_000}
                response = client.post("/v1/scores", json=body)
                statuses.append(response.status_code)
                if response.status_code == 202:
                    accepted.update(a["run_id"] for a in response.json()["accepted"])
                else:
                    refusal = response
            assert statuses == [202, 202, 202, 429, 429]  # 3 x 300 kB fit in 1 MiB, 4 do not
            assert refusal.json()["error"] == "queue_full"
            assert "live.max_queue_bytes" in refusal.json()["message"]
            stats = client.get("/v1/stats").json()
            assert 900_000 < stats["queued_bytes"] < 1 << 20
            assert stats["dropped_queue_full"] == 2
            assert client.get("/readyz").status_code == 200  # not full: small items still fit
            small = client.post("/v1/scores", json=pair(9))
            assert small.status_code == 202
            accepted.update(a["run_id"] for a in small.json()["accepted"])
        assert process.terminate() == 0
        accounting = check_nothing_lost(process, accepted)
        assert accounting["queued_bytes"] == 0  # released when the runs were given up
    finally:
        process.kill()


def test_sigterm_refuses_new_work_drains_then_exits_zero(
    tmp_path: Path, slow_judge: LoopbackJudgeServer
) -> None:
    process = start(tmp_path, slow_judge, concurrency=2, shutdown_timeout=4)
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:
            accepted: set[str] = set()
            for index in range(6):
                response = client.post("/v1/scores", json=pair(index, ["judged", "length"]))
                assert response.status_code == 202
                accepted.update(a["run_id"] for a in response.json()["accepted"])
            # 202 came back before any judge answer: the judge takes 20 s per call.
            stats = client.get("/v1/stats").json()
            assert stats["sampled"] == 12
            assert stats["in_flight"] + stats["queued"] >= 5
            process.process.send_signal(15)
            deadline = time.monotonic() + 10
            refused: httpx.Response | None = None
            attempt = 100
            while time.monotonic() < deadline:
                attempt += 1  # a new request each time: the same one again would be a retry
                response = client.post("/v1/scores", json=pair(attempt))
                if response.status_code == 503:
                    refused = response
                    break
                assert response.status_code == 202
                accepted.update(a["run_id"] for a in response.json()["accepted"])
                time.sleep(0.02)
            assert refused is not None, "no 503 while draining"
            assert refused.json()["error"] == "shutting_down"
            assert refused.headers["retry-after"] == "2"
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"]["accepting"] is False
            assert client.get("/healthz").status_code == 200
        assert process.process.wait(60) == 0
        accounting = check_nothing_lost(process, accepted)
        # The two slots were taken by judged runs that could not finish: what waited behind
        # them was given up too, and counted.
        assert accounting["dropped_shutdown"] >= 6
        assert accounting["scored"] >= 1
    finally:
        process.kill()


def test_sigterm_with_a_fast_judge_finishes_everything(tmp_path: Path) -> None:
    with LoopbackJudgeServer(default=Reply('{"score": 0.25}', delay=0.05)) as judge:
        process = start(tmp_path, judge, concurrency=2, shutdown_timeout=30)
        try:
            with httpx.Client(base_url=process.url, timeout=30) as client:
                response = client.post(
                    "/v1/scores:batch", json={"items": [pair(i) for i in range(30)]}
                )
                assert response.status_code == 202
                accepted = {
                    a["run_id"] for item in response.json()["items"] for a in item["accepted"]
                }
                assert len(accepted) == 30
            assert process.terminate() == 0  # at once: the drain does the work
            accounting = check_nothing_lost(process, accepted)
            assert accounting["scored"] == 30
            assert accounting["dropped_shutdown"] == 0
            rows = sqlite_rows(process.config.parent / "scores.db")
            assert {row["score"] for row in rows} == {0.25}
        finally:
            process.kill()


def test_a_judge_outage_fails_runs_not_requests(tmp_path: Path) -> None:
    with LoopbackJudgeServer(default=HttpError(503)) as judge:
        process = start(tmp_path, judge)
        try:
            with httpx.Client(base_url=process.url, timeout=30) as client:
                ids: set[str] = set()
                for index in range(5):
                    response = client.post("/v1/scores", json=pair(index))
                    assert response.status_code == 202
                    ids.update(a["run_id"] for a in response.json()["accepted"])
                stats = wait_idle(client)
                assert stats["failed"] == 5
                rows = client.get("/v1/scores", params={"status": "failed"}).json()["scores"]
                assert {row["id"] for row in rows} == ids
                assert all(row["failedStep"] == "generateScore" for row in rows)
                assert all(row["score"] is None for row in rows)
                assert client.get("/readyz").status_code == 200
            assert process.terminate() == 0
            check_nothing_lost(process, ids)
        finally:
            process.kill()
