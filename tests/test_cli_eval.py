"""`scorewatch eval` and `scorewatch report` end to end, in subprocesses, on a loopback judge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import require_binary
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]


def scorewatch(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> Any:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "scorewatch", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=ROOT,
    )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [
    {"input": "q1", "output": "a long enough answer here"},
    {"input": "q2", "output": "short"},
    {"input": "q3", "output": "another long enough answer"},
]


def test_jsonl_scores_and_summary(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "results.jsonl"
    done = scorewatch(
        "eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["score"] for r in records) == [0.0, 1.0, 1.0]
    assert "length" in done.stdout and "0.667" in done.stdout
    # Not a terminal: plain progress lines, no carriage returns.
    assert "3/3 items" in done.stderr and "\r" not in done.stderr


def test_csv_input_and_target(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("input,ground_truth\nhello,x\nbye,y\n", encoding="utf-8")
    done = scorewatch(
        "eval",
        str(data),
        "--scorer",
        "tests.cli_scorers:length_scorer",
        "--target",
        "tests.cli_scorers:upper_target",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["scorers"]["length"]["mean"] == 1.0
    assert summary["passed"] is True


def test_threshold_failure_exits_nonzero(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    done = scorewatch(
        "eval",
        str(data),
        "--scorer",
        "tests.cli_scorers:length_scorer",
        "--threshold",
        "tests.cli_scorers:length_scorer=0.9",
    )
    assert done.returncode == 1
    assert "threshold failed: length" in done.stdout
    passing = scorewatch(
        "eval",
        str(data),
        "--scorer",
        "tests.cli_scorers:length_scorer",
        "--threshold",
        "tests.cli_scorers:length_scorer=0.5",
    )
    assert passing.returncode == 0, passing.stdout


def test_bad_inputs_get_clear_errors(tmp_path: Path) -> None:
    missing = scorewatch(
        "eval", str(tmp_path / "nope.jsonl"), "--scorer", "tests.cli_scorers:length_scorer"
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "a", "output": "b"}\n{"input": "c"}\n', encoding="utf-8")
    row = scorewatch("eval", str(bad), "--scorer", "tests.cli_scorers:length_scorer")
    assert row.returncode == 2 and "bad.jsonl:2" in row.stderr and "'output'" in row.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"input": "a", "output": "b"}\n{oops\n', encoding="utf-8")
    parse = scorewatch("eval", str(broken), "--scorer", "tests.cli_scorers:length_scorer")
    assert parse.returncode == 2 and "broken.jsonl:2" in parse.stderr
    unknown = scorewatch("eval", str(bad), "--scorer", "tests.cli_scorers:nothing_here")
    assert unknown.returncode == 2 and "cannot import" in unknown.stderr


def test_judged_scorer_through_litellm_with_html_report(tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Explain"):
            return Reply(text="because it is fine")
        return Reply(text='{"score": 0.25}' if "short" in prompt else '{"score": 0.75}')

    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    with LoopbackJudgeServer(script) as server:
        done = scorewatch(
            "eval",
            str(data),
            "--scorer",
            "tests.cli_scorers:judged_scorer",
            "--out",
            str(out),
            "--html",
            str(html),
            "--concurrency",
            "2",
            env={"SCOREWATCH_TEST_API_BASE": server.base_url},
        )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["score"] for r in records) == [0.25, 0.75, 0.75]
    assert all(r["judge_calls"] == 2 and r["tokens"] == 60 for r in records)
    assert all(r["reason"] == "because it is fine" for r in records)
    page = html.read_text()
    assert "<script src" not in page and "@import" not in page and "https://" not in page
    assert "judged" in page


def test_interrupted_run_keeps_finished_results(tmp_path: Path) -> None:
    rows = [{"input": f"q{i}", "output": f"answer number {i}"} for i in range(40)]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    out = tmp_path / "results.jsonl"
    with LoopbackJudgeServer(Reply(text='{"score": 1}', delay=0.2)) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SCOREWATCH_TEST_API_BASE": server.base_url}
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scorewatch",
                "eval",
                str(data),
                "--scorer",
                "tests.cli_scorers:judged_scorer",
                "--out",
                str(out),
                "--concurrency",
                "1",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, _ = process.communicate(timeout=60)
    assert process.returncode == 130
    lines = out.read_text().splitlines()
    assert 2 <= len(lines) < 40
    assert all(json.loads(line)["score"] == 1 for line in lines)
    assert "interrupted" in stdout


def test_report_command_and_charts_render_in_chromium(tmp_path: Path) -> None:
    records = [
        {
            "item": i,
            "scorer_id": "s",
            "score": i / 10,
            "reason": f"<b>r{i}</b>",
            "output": "o",
            "error": None,
            "judge_calls": 3,
            "tokens": 90,
            "estimated_cost_usd": 0.001,
        }
        for i in range(10)
    ] + [
        {
            "item": 10,
            "scorer_id": "s",
            "score": None,
            "error": "Scorer Run Failed: x",
            "failed_step": "analyze",
            "judge_calls": 1,
            "tokens": 0,
        }
    ]
    results = write_jsonl(tmp_path / "results.jsonl", records)
    html = tmp_path / "report.html"
    done = scorewatch("report", str(results), "--html", str(html))
    assert done.returncode == 0, done.stderr
    page = html.read_text()
    assert "&lt;b&gt;r0&lt;/b&gt;" in page and "<b>r0</b>" not in page
    assert "analyze" in page and "Scorer Run Failed: x" in page
    chromium = require_binary("chromium")
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    rendered = dom.stdout
    assert 'data-charts-rendered="' in rendered, dom.stderr[-2000:]
    count = int(rendered.split('data-charts-rendered="')[1].split('"')[0])
    assert count == 10 + 1  # ten histogram bins + one mean bar
    assert rendered.count('class="bar"') == 11


@pytest.mark.parametrize("flag", ["--help"])
def test_eval_help(flag: str) -> None:
    done = scorewatch("eval", flag)
    assert done.returncode == 0 and "--threshold" in done.stdout


def test_sqlite_sink_receives_results(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    db = tmp_path / "scores.db"
    done = scorewatch(
        "eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", "--sqlite", str(db)
    )
    assert done.returncode == 0, done.stderr
    from scorewatch.live import SqliteSink

    rows = SqliteSink(db).query(limit=10)
    assert sorted(row["score"] for row in rows) == [0.0, 1.0, 1.0]
    assert {row["source"] for row in rows} == {"TEST"}
