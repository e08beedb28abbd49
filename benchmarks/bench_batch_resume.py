"""Batch-priced scoring end to end, killed and resumed (issue #33 part 4).

    .venv/bin/python benchmarks/bench_batch_resume.py [-o result.json] [--items 1000]

`scorewatch eval --batch` scores `--items` dataset rows with two three-step LLM-judged scorers
(answer-relevancy, faithfulness: 6 judge requests per item) against the Batch API stand-in
(scorewatch.testing.batch_server, in this process, each request line taking `--line-s`). It is
run twice: once uninterrupted, and once killed with SIGKILL while its second round's batch is in
progress, then started again with the same state file. Reported: wall time of each, the batches
and requests the stand-in received, how many requests each process submitted or took from the
killed run's batches, and the check the issue asks for: every (item, scorer) run in the results
exactly once, and every judge request received by the provider exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common

from scorewatch.testing.batch_server import BatchStandInServer

SCORERS = ["--scorer", "answer-relevancy", "--scorer", "faithfulness"]
CALLS_PER_ITEM = 6


def _command(server: BatchStandInServer, data: Path, out: Path, state: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "scorewatch",
        "eval",
        str(data),
        *SCORERS,
        "--model",
        "openai/gpt-4o-mini",
        "--model-option",
        f"api_base={server.base_url}",
        "--model-option",
        "api_key=sk-bench",
        "--out",
        str(out),
        "--batch",
        "--batch-state",
        str(state),
        "--batch-poll",
        "0.2",
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(_common.REPO / "src")}


def _counts(stderr: str) -> tuple[int, int]:
    found = re.search(r"(\d+) request\(s\) submitted, (\d+) answered by batches", stderr)
    if found is None:
        raise RuntimeError(f"no batch summary in the run's stderr:\n{stderr[-2000:]}")
    return int(found[1]), int(found[2])


def _check(out: Path, server: BatchStandInServer, items: int) -> dict[str, Any]:
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    runs = {(r["item"], r["scorer_id"]) for r in records}
    return {
        "records": len(records),
        "distinct_runs": len(runs),
        "failed_runs": sum(1 for r in records if r["error"]),
        "requests_received": sum(server.line_counts.values()),
        "distinct_requests": len(server.line_counts),
        "requests_received_twice": sum(1 for n in server.line_counts.values() if n > 1),
        "batches": len(server.batches),
        "cost_usd": sum(r["estimated_cost_usd"] or 0 for r in records),
        "exactly_once": len(records) == len(runs) == items * 2
        and len(server.line_counts) == items * CALLS_PER_ITEM
        and set(server.line_counts.values()) == {1},
    }


def uninterrupted(items: int, line_s: float, folder: Path, data: Path) -> dict[str, Any]:
    out, state = folder / "plain.jsonl", folder / "plain-state.json"
    with BatchStandInServer(line_s=line_s, record_requests=False) as server:
        started = time.perf_counter()
        done = subprocess.run(
            _command(server, data, out, state), capture_output=True, text=True, env=_env()
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        submitted, _ = _counts(done.stderr)
        return {"wall_s": wall, "submitted": submitted, **_check(out, server, items)}


def killed_and_resumed(items: int, line_s: float, folder: Path, data: Path) -> dict[str, Any]:
    out, state = folder / "killed.jsonl", folder / "killed-state.json"
    with BatchStandInServer(line_s=line_s, record_requests=False) as server:
        command = _command(server, data, out, state)
        started = time.perf_counter()
        first = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env()
        )
        while not (
            len(server.batches) >= 2
            and list(server.batches.values())[1]["request_counts"]["completed"] > items
        ):
            if first.poll() is not None:
                raise RuntimeError("the first run ended before it could be killed")
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = time.perf_counter() - started
        progress = dict(list(server.batches.values())[1]["request_counts"])
        state_batches = len(json.loads(state.read_text(encoding="utf-8"))["batches"])
        done = subprocess.run(command, capture_output=True, text=True, env=_env())
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        submitted, resumed = _counts(done.stderr)
        return {
            "killed_after_s": killed_at,
            "round_2_when_killed": progress,
            "batches_in_state_file": state_batches,
            "resumed_run_s": wall - killed_at,
            "wall_s": wall,
            "resumed_run_submitted": submitted,
            "resumed_run_took_from_killed_batches": resumed,
            **_check(out, server, items),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--line-s", type=float, default=0.0005)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        data = folder / "data.jsonl"
        data.write_text(
            "".join(
                json.dumps({"input": f"What is item {i}?", "output": f"Item {i} is a thing."})
                + "\n"
                for i in range(args.items)
            ),
            encoding="utf-8",
        )
        result = {
            "items": args.items,
            "judge_requests_per_item": CALLS_PER_ITEM,
            "line_s": args.line_s,
            "machine": _common.machine(),
            "uninterrupted": uninterrupted(args.items, args.line_s, folder, data),
            "killed_and_resumed": killed_and_resumed(args.items, args.line_s, folder, data),
        }
    _common.emit(result, args.output)


if __name__ == "__main__":
    main()
