"""`scorewatch serve` with `[privacy]`: a real serve process scores the seeded corpus against
the loopback judge, with content capture on, OTLP export to the test receiver, /metrics and
debug logs. The judge's requests hold every seeded value; the `/v1/scores` answers, the SQLite
and JSONL rows, the OTLP protobuf, the Prometheus text and the log hold none."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from otlp_receiver import OtlpReceiver
from privacy_support import (
    GROUND_TRUTH,
    INPUT,
    OUTPUT,
    REQUEST_CONTEXT,
    judge_reply,
    judge_saw_everything,
    leaks,
)
from scorewatch.testing import LoopbackJudgeServer
from serve_support import ServeProcess, write_config

pytestmark = pytest.mark.e2e

TESTS = Path(__file__).resolve().parents[1]
CONFIG = """\
[server]
log_level = "debug"

[[scorers]]
id = "private"
factory = "privacy_support:cli_private_scorer"

[sinks]
sqlite = "scores.db"
jsonl = "scores.jsonl"

[telemetry]
service_name = "scorewatch-privacy"
capture_content = true

[privacy]
redact = ["all"]
patterns = { EMPLOYEE = 'EMP-\\d{6}' }
"""


def _wal(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


def test_serve_keeps_and_exports_no_personal_data(tmp_path: Path) -> None:
    with LoopbackJudgeServer(judge_reply) as judge, OtlpReceiver(grpc_enabled=False) as otlp:
        env = {
            "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)]),
            "SCOREWATCH_TEST_API_BASE": judge.base_url,
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.http_endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }
        served = ServeProcess(write_config(tmp_path, CONFIG, module=False), env=env)
        try:
            served.wait_listening()
            with httpx.Client(base_url=served.url, timeout=60) as http:
                answer = http.post(
                    "/v1/scores",
                    params={"wait": "true"},
                    json={
                        "input": INPUT,
                        "output": OUTPUT,
                        "target": "support-bot",
                        "ground_truth": GROUND_TRUTH,
                        "request_context": REQUEST_CONTEXT,
                    },
                )
                listed = http.get("/v1/scores")
                metrics = http.get("/metrics").text
            assert served.terminate() == 0  # flushes every exporter
        finally:
            served.kill()
        judge_saw_everything(judge)
        exported = b"".join(request.message.SerializeToString() for request in otlp.requests)
    result = answer.json()["results"][0]
    assert result["status"] == "success" and result["score"] == 1.0, result
    assert "<EMAIL_1>" in result["reason"]
    every_byte = {
        "answer": answer.content,
        "listed": listed.content,
        "otlp": exported,
        "metrics": metrics.encode(),
        "sqlite": (tmp_path / "scores.db").read_bytes() + _wal(tmp_path / "scores.db"),
        "jsonl": (tmp_path / "scores.jsonl").read_bytes(),
        "log": served.stderr_path.read_bytes(),
    }
    # Content capture was on: the spans did carry the content, redacted.
    assert b"<EMAIL_1>" in exported and b"<CARD_1>" in exported
    for where, data in every_byte.items():
        assert leaks(data) == [], f"personal data reached the {where}"
