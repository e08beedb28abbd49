"""Identity and accounting against a real `scorewatch serve` (issue 17, items 12 and 14): a
retried request names the same runs and leaves the same rows, a different request for the same
trace and span gets rows of its own (across restarts too: no memory is involved); at shutdown,
a run counted `dropped_shutdown` is never stored, SQLite and JSONL hold exactly the same runs,
and the 503s sent while draining are counted."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from scorewatch.testing import LoopbackJudgeServer, Reply
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

{judge}

"""
    + JUDGED_AND_LENGTH_SCORERS
    + """
[live]
max_concurrency = 8

[sinks]
sqlite = "scores.db"
jsonl = "scores.jsonl"
"""
)


@pytest.fixture
def judge() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(default=Reply('{"score": 0.5}', delay=0.4)) as server:
        yield server


def start(
    directory: Path, judge: LoopbackJudgeServer | None, shutdown_timeout: float
) -> ServeProcess:
    if judge is None:  # no judged scorer: no litellm to load, a quicker start
        parts = CONFIG.split("[[scorers]]")
        text = parts[0].format(judge="", shutdown_timeout=shutdown_timeout)
        process = ServeProcess(write_config(directory, text + "[[scorers]]" + parts[2]))
        process.wait_listening()
        return process
    body = CONFIG.format(judge=judge_table(judge.base_url), shutdown_timeout=shutdown_timeout)
    process = ServeProcess(
        write_config(directory, body), env={"SW_TEST_JUDGE_BASE": judge.base_url}
    )
    process.wait_listening()
    return process


def jsonl_ids(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["id"] for line in path.read_text("utf-8").splitlines() if line]


def run_ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 202, answer.text
    return [a["run_id"] for a in answer.json()["accepted"]]


def test_a_retry_is_the_same_run_and_a_different_request_never_overwrites(
    tmp_path: Path,
) -> None:
    call = {
        "scorers": ["length"],
        "target": "bot",
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        "span_id": "00f067aa0ba902b7",
        "input": "q",
        "output": "first answer",
    }
    later = call | {"output": "a later, different answer in the same span"}
    process = start(tmp_path, None, shutdown_timeout=5)
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:
            first = run_ids(client.post("/v1/scores", json=call))
            assert run_ids(client.post("/v1/scores", json=call)) == first  # a client retry
            # Key order is not what makes a request different.
            reordered = dict(reversed(list(call.items())))
            assert run_ids(client.post("/v1/scores", json=reordered)) == first
            other = run_ids(client.post("/v1/scores", json=later))
            assert other != first
            wait_idle(client)
        assert process.terminate() == 0
    finally:
        process.kill()
    rows = {row["id"]: row for row in sqlite_rows(tmp_path / "scores.db")}
    assert set(rows) == {first[0], other[0]}
    assert json.loads(rows[first[0]]["output"]) == "first answer"

    # A restart forgets everything it held in memory; the ids do not change.
    restarted = start(tmp_path, None, shutdown_timeout=5)
    try:
        with httpx.Client(base_url=restarted.url, timeout=30) as client:
            assert run_ids(client.post("/v1/scores", json=call)) == first
            assert run_ids(client.post("/v1/scores", json=later)) == other
            third = run_ids(client.post("/v1/scores", json=call | {"output": "third"}))
            wait_idle(client)
        assert restarted.terminate() == 0
    finally:
        restarted.kill()
    rows = {row["id"]: row for row in sqlite_rows(tmp_path / "scores.db")}
    assert set(rows) == {first[0], other[0], third[0]}
    assert json.loads(rows[first[0]]["output"]) == "first answer"  # never overwritten


def test_shutdown_accounting_matches_sqlite_and_jsonl_exactly(
    tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    process = start(tmp_path, judge, shutdown_timeout=1.0)
    accepted: set[str] = set()
    refused_503 = 0
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:

            def send(index: int) -> list[str]:
                body = {"scorers": ["judged", "length"], "target": "bot", "input": "q"}
                body["output"] = f"answer {index}"
                return run_ids(client.post("/v1/scores", json=body))

            with ThreadPoolExecutor(8) as pool:
                for ids in pool.map(send, range(60)):
                    accepted.update(ids)
            process.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            index = 1000
            while time.monotonic() < deadline:
                index += 1
                try:
                    answer = client.post(
                        "/v1/scores", json={"target": "bot", "input": "q", "output": str(index)}
                    )
                except httpx.HTTPError:
                    break  # the listener closed: draining is over
                if answer.status_code == 503:
                    refused_503 += 1
                else:
                    accepted.update(run_ids(answer))
                time.sleep(0.01)
        assert process.process.wait(60) == 0
    finally:
        process.kill()
    assert refused_503 > 0
    accounting = process.final_accounting()
    assert accounting["rejected_draining"] == refused_503
    in_sqlite = {row["id"] for row in sqlite_rows(tmp_path / "scores.db")}
    lines = jsonl_ids(tmp_path / "scores.jsonl")
    assert len(lines) == len(set(lines))
    assert set(lines) == in_sqlite  # the two sinks agree, run for run
    assert in_sqlite <= accepted
    dropped = accepted - in_sqlite
    assert accounting["dropped_shutdown"] == len(dropped) > 0  # never stored, all counted
    assert accounting["scored"] + accounting["failed"] == len(in_sqlite)
    assert accounting["sampled"] == len(accepted)
    assert accounting["queued"] == accounting["in_flight"] == 0
    assert accounting["sink_dropped"] == accounting["sink_refused"] == 0
