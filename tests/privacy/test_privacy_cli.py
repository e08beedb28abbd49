"""`scorewatch eval --redact ...`: the judge reads the dataset as it is; the results file, the
SQLite rows, the HTML report and what the command prints keep none of the personal data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from privacy_support import dataset_line, judge_reply, judge_saw_everything, leaks
from scorewatch.testing.judge_server import LoopbackJudgeServer

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
SCORER = "privacy_support:cli_private_scorer"
REDACT = ["--redact", "all", "--redact-pattern", r"EMPLOYEE=EMP-\d{6}"]


def eval_run(
    server: LoopbackJudgeServer, folder: Path, *options: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    folder.mkdir()
    data = folder / "data.jsonl"
    data.write_text(json.dumps(dataset_line()) + "\n", encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment.update(
        PYTHONPATH=PYTHONPATH,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        SCOREWATCH_TEST_API_BASE=server.base_url,
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scorewatch",
            "eval",
            str(data),
            "--scorer",
            SCORER,
            "--out",
            str(folder / "results.jsonl"),
            "--sqlite",
            str(folder / "scores.db"),
            "--html",
            str(folder / "report.html"),
            *options,
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        cwd=ROOT,
    )
    return done, folder


def kept_files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.name != "data.jsonl"}


def test_eval_keeps_no_personal_data_and_scores_as_without_the_policy(tmp_path: Path) -> None:
    with LoopbackJudgeServer(judge_reply) as server:
        private, folder = eval_run(server, tmp_path / "private", *REDACT)
        assert private.returncode == 0, private.stderr
        judge_saw_everything(server)
        plain, plain_folder = eval_run(server, tmp_path / "plain")
        assert plain.returncode == 0, plain.stderr
    files = kept_files(folder)
    assert {"results.jsonl", "scores.db", "report.html"} <= set(files)
    for name, blob in files.items():
        assert leaks(blob) == [], name
    assert leaks(private.stdout + private.stderr) == []
    (line,) = [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines()]
    assert "<EMAIL_1>" in line["reason"] and "<IBAN_1>" in line["ground_truth"]
    assert "EMAIL_1" in (folder / "report.html").read_text(encoding="utf-8")  # escaped
    # The same verdict as a run that keeps everything (which does store the data).
    (plain_line,) = [
        json.loads(x) for x in (plain_folder / "results.jsonl").read_text().splitlines()
    ]
    assert line["score"] == plain_line["score"] == 1.0
    plain_files = kept_files(plain_folder)
    assert all(leaks(plain_files[name]) for name in ("results.jsonl", "scores.db", "report.html"))


def test_a_bad_pattern_is_refused_naming_it(tmp_path: Path) -> None:
    with LoopbackJudgeServer(judge_reply) as server:
        done, _ = eval_run(server, tmp_path / "bad", "--redact-pattern", "ID=(")
    assert done.returncode == 2
    assert "--redact options" in done.stderr and "does not compile" in done.stderr
