"""`scorewatch score-traces --redact ...`: an instrumented agent's trace file holds the seeded
corpus (the user's message, the model's answer, a tool call's arguments); scoring it, the judge
reads every value, and the results file, the SQLite rows, the OTLP export (content capture on)
and the command's output hold none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otlp_receiver import OtlpReceiver
from privacy_support import (
    agent_spans,
    judge_reply,
    judge_saw_everything,
    leaks,
)
from scorewatch.testing.judge_server import LoopbackJudgeServer
from traces_support import otlp_json

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])


def _trace_file(path: Path) -> Path:
    spans = agent_spans()
    path.write_text("".join(otlp_json([span]) + "\n" for span in spans), encoding="utf-8")
    return path


def test_score_traces_keeps_and_exports_no_personal_data(tmp_path: Path) -> None:
    traces = _trace_file(tmp_path / "traces.json")
    assert leaks(traces.read_bytes()) != []  # the input does hold the corpus
    out, db = tmp_path / "results.jsonl", tmp_path / "scores.db"
    with LoopbackJudgeServer(judge_reply) as judge, OtlpReceiver(grpc_enabled=False) as otlp:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        environment.update(
            PYTHONPATH=PYTHONPATH,
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            SCOREWATCH_TEST_API_BASE=judge.base_url,
            OTEL_EXPORTER_OTLP_ENDPOINT=otlp.http_endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
        )
        done = subprocess.run(
            [
                sys.executable, "-m", "scorewatch", "score-traces", str(traces),
                "--operation", "invoke_agent",
                "--scorer", "privacy_support:cli_private_scorer",
                "--redact", "all", "--redact-pattern", r"EMPLOYEE=EMP-\d{6}",
                "--out", str(out), "--sqlite", str(db), "--otel",
            ],
            capture_output=True, text=True, env=environment, timeout=180, cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        judge_saw_everything(judge)
        exported = b"".join(request.message.SerializeToString() for request in otlp.requests)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines and all(line["score"] == 1.0 for line in lines), lines
    assert b"<EMAIL_1>" in exported  # content was exported, redacted
    wal = db.with_name(db.name + "-wal")
    every_byte = {
        "results": out.read_bytes(),
        "sqlite": db.read_bytes() + (wal.read_bytes() if wal.exists() else b""),
        "otlp": exported,
        "output": (done.stdout + done.stderr).encode(),
    }
    for where, data in every_byte.items():
        assert leaks(data) == [], f"personal data reached the {where}"
