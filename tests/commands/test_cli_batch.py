"""`scorewatch eval --batch` end to end, in subprocesses, against the Batch API stand-in
(scorewatch.testing.batch_server): the same records as a direct run at the batch price, one
batch per scorer step, failed lines retried in the next round, and a run killed with SIGKILL
mid-batch resumed from its state file with every request submitted exactly once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli_support import PYTHONPATH, ROOT, scorewatch, write_jsonl
from scorewatch.testing.batch_server import BatchStandInServer, schema_answer
from scorewatch.testing.judge_server import Behaviour, HttpError

pytestmark = pytest.mark.e2e

# Two multi-step LLM-judged scorers: three judge calls per item each.
SCORERS = ["--scorer", "answer-relevancy", "--scorer", "faithfulness"]
CALLS_PER_ITEM = 6


def _judge(server: BatchStandInServer) -> list[str]:
    return [
        "--model",
        "openai/gpt-4o-mini",
        "--model-option",
        f"api_base={server.base_url}",
        "--model-option",
        "api_key=sk-batch-test",
    ]


def _data(tmp_path: Path, count: int) -> Path:
    rows = [
        {"input": f"What is item {i}?", "output": f"Item {i} is a thing."} for i in range(count)
    ]
    return write_jsonl(tmp_path / "data.jsonl", rows)


def _records(path: Path) -> dict[tuple[int, str], dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    keyed = {(r["item"], r["scorer_id"]): r for r in records}
    assert len(keyed) == len(records), "an (item, scorer) run was written twice"
    return keyed


def test_batch_run_has_the_direct_runs_records_at_the_batch_price(tmp_path: Path) -> None:
    data = _data(tmp_path, 3)
    direct_out, batch_out = tmp_path / "direct.jsonl", tmp_path / "batch.jsonl"
    with BatchStandInServer() as server:
        direct = scorewatch("eval", str(data), *SCORERS, *_judge(server), "--out", str(direct_out))
        assert direct.returncode == 0, direct.stderr
        chat_calls = server.request_count
        batched = scorewatch(
            "eval",
            str(data),
            *SCORERS,
            *_judge(server),
            "--out",
            str(batch_out),
            "--batch",
            "--batch-poll",
            "0.1",
        )
        assert batched.returncode == 0, batched.stderr
        batches = list(server.batches.values())
        direct_paths = [r.path for r in server.requests[chat_calls:] if "chat" in r.path]
    assert direct_paths == [], "a batch run made direct chat calls"
    # One batch per step: preprocess, analyze and reason; each holds every item of both scorers.
    assert [b["request_counts"]["total"] for b in batches] == [6, 6, 6]
    assert all(b["status"] == "completed" for b in batches)
    assert sum(server.line_counts.values()) == 3 * CALLS_PER_ITEM
    direct_records, batch_records = _records(direct_out), _records(batch_out)
    assert direct_records.keys() == batch_records.keys()
    for key, record in batch_records.items():
        expected = direct_records[key]
        assert record.keys() == expected.keys()
        for field in record.keys() - {"run_id", "estimated_cost_usd"}:
            assert record[field] == expected[field], (key, field)
        # gpt-4o-mini's batch prices in litellm's table are half its direct prices.
        assert record["estimated_cost_usd"] == pytest.approx(expected["estimated_cost_usd"] / 2)
    assert "batch round 3: submitted" in batched.stderr
    assert "completed (6/6 done, 0 failed)" in batched.stderr
    assert not Path(f"{batch_out}.batch-state.json").exists()


def test_a_failed_line_is_retried_in_the_next_round_and_a_refused_one_fails(
    tmp_path: Path,
) -> None:
    data = _data(tmp_path, 2)
    out = tmp_path / "out.jsonl"
    seen: set[str] = set()

    def script(body: dict[str, Any]) -> Behaviour:
        prompt = json.dumps(body["messages"]).lower()
        if "item 0" in prompt and prompt not in seen:
            seen.add(prompt)
            return HttpError(500)  # transient: the scorer core retries it
        if "item 1" in prompt:
            return HttpError(400)  # refused: never retried, never a silent zero
        return schema_answer(body)

    with BatchStandInServer(script) as server:
        done = scorewatch(
            "eval",
            str(data),
            "--scorer",
            "answer-relevancy",
            *_judge(server),
            "--out",
            str(out),
            "--batch",
            "--batch-poll",
            "0.1",
        )
    records = _records(out)
    assert done.returncode == 1, done.stderr
    ok, refused = records[(0, "answer-relevancy-scorer")], records[(1, "answer-relevancy-scorer")]
    assert ok["error"] is None and ok["score"] == 0
    assert ok["judge_attempts"] == 2 * ok["judge_calls"]  # every step failed once, then passed
    assert refused["score"] is None
    assert refused["error_code"] == "BAD_REQUEST"


def _start(args: list[str]) -> subprocess.Popen[str]:
    environment = {**os.environ, "PYTHONPATH": PYTHONPATH}
    return subprocess.Popen(
        [sys.executable, "-m", "scorewatch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        cwd=ROOT,
    )


def _wait_for(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("creation_recorded", [True, False])
def test_killed_run_resumes_and_scores_every_item_exactly_once(
    tmp_path: Path, creation_recorded: bool
) -> None:
    """SIGKILL while the second round's batch is in progress; the restarted run polls and
    downloads the killed run's batches and submits only what they do not hold. Without
    `creation_recorded`, the kill is as if it came between creating a batch and writing its id:
    the restarted run finds the batch by its input file instead of creating another."""
    items = 30
    data = _data(tmp_path, items)
    out = tmp_path / "out.jsonl"
    state = tmp_path / "batch-state.json"
    args = [
        "eval",
        str(data),
        *SCORERS,
        "--out",
        str(out),
        "--batch",
        "--batch-state",
        str(state),
        "--batch-poll",
        "0.1",
    ]
    with BatchStandInServer(line_s=0.01) as server:
        killed = _start([*args, *_judge(server)])
        try:
            _wait_for(
                lambda: (
                    len(server.batches) >= 2
                    and list(server.batches.values())[1]["status"] == "in_progress"
                )
            )
        finally:
            killed.send_signal(signal.SIGKILL)
            killed.communicate()
        assert "sk-batch-test" not in state.read_text(encoding="utf-8")
        saved = json.loads(state.read_text(encoding="utf-8"))
        assert [b["batch_id"] for b in saved["batches"]] == list(server.batches)
        if not creation_recorded:
            saved["batches"][-1]["batch_id"] = None
            state.write_text(json.dumps(saved), encoding="utf-8")
        resumed = _start([*args, *_judge(server)])
        _, stderr = resumed.communicate(timeout=120)
        batches = list(server.batches.values())
    assert resumed.returncode == 0, stderr
    assert len(_records(out)) == items * 2
    assert all(r["error"] is None for r in _records(out).values())
    # Every judge request reached the provider once: none resubmitted after the kill.
    assert len(server.line_counts) == items * CALLS_PER_ITEM
    assert set(server.line_counts.values()) == {1}
    assert len(batches) == 3
    # The killed run's two rounds (each step of every item of both scorers) were not resent.
    resumed_count = re.search(r"(\d+) request\(s\) submitted, (\d+) answered by batches", stderr)
    assert resumed_count is not None, stderr
    assert int(resumed_count[2]) == 2 * items * 2
    assert int(resumed_count[1]) == items * 2
    assert not state.exists()


def test_batches_the_server_does_not_know_are_submitted_again(tmp_path: Path) -> None:
    """A state file naming batches another server holds (another account, or expired long ago):
    the restarted run is told 404 for them and submits their requests to the server it talks
    to, once each."""
    items = 10
    data = _data(tmp_path, items)
    out, state = tmp_path / "out.jsonl", tmp_path / "state.json"
    args = ["eval", str(data), *SCORERS, "--out", str(out), "--batch", "--batch-state"]
    args += [str(state), "--batch-poll", "0.1"]
    with BatchStandInServer(line_s=0.01) as first:
        killed = _start([*args, *_judge(first)])
        try:
            _wait_for(lambda: len(first.batches) >= 1)
            _wait_for(lambda: json.loads(state.read_text())["batches"][0].get("batch_id"))
        finally:
            killed.send_signal(signal.SIGKILL)
            killed.communicate()
    with BatchStandInServer() as second:
        resumed = _start([*args, *_judge(second)])
        _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert "the server does not know batch_standin" in stderr
    assert len(_records(out)) == items * 2
    assert len(second.line_counts) == items * CALLS_PER_ITEM
    assert set(second.line_counts.values()) == {1}


def test_estimate_with_batch_prices_the_calls_at_the_batch_price(tmp_path: Path) -> None:
    data = _data(tmp_path, 4)
    judge = ["--model", "openai/gpt-4o-mini", "--model-option", "api_key=sk-estimate"]
    estimates = []
    for extra in ([], ["--batch"]):
        done = scorewatch(
            "eval", str(data), *SCORERS, *judge, "--estimate", "--format", "json", *extra
        )
        assert done.returncode == 0, done.stderr
        estimates.append(json.loads(done.stdout)["estimate"])
    direct, batched = estimates
    assert batched["judge_calls"] == direct["judge_calls"] == 4 * CALLS_PER_ITEM
    assert batched["cost_usd"] == pytest.approx(direct["cost_usd"] / 2)
    assert "Batch API prices" in batched["price_source"]
