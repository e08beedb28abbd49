"""`scorewatch eval` exports its runs over OTLP with `--otel` or the standard variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ROWS = [{"input": "q1", "output": "a long enough answer here"}, {"input": "q2", "output": "short"}]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver(grpc_enabled=False) as running:
        yield running


def _eval(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment.update(
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        **env,
    )
    command = ["eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", *args]
    return subprocess.run(
        [sys.executable, "-m", "scorewatch", *command],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=120,
    )


def test_eval_otel_exports_every_run(receiver: OtlpReceiver, tmp_path: Path) -> None:
    done = _eval(
        tmp_path,
        "--otel",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{receiver.http_endpoint}/v1/traces",
        OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=f"{receiver.http_endpoint}/v1/logs",
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=f"{receiver.http_endpoint}/v1/metrics",
    )
    assert done.returncode == 0, done.stderr
    runs = receiver.spans_named("evaluation length")
    assert len(runs) == 2
    assert {span.attributes["scorewatch.score_source"] for span in runs} == {"experiment"}
    assert {span.resource["service.name"] for span in runs} == {"scorewatch-eval"}
    assert len(receiver.log_records("gen_ai.evaluation.result")) == 2
    assert receiver.metric_points("scorewatch.evaluation.score")


def test_eval_exports_when_the_environment_asks(receiver: OtlpReceiver, tmp_path: Path) -> None:
    done = _eval(
        tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint,
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_SERVICE_NAME="ci-eval",
    )
    assert done.returncode == 0, done.stderr
    runs = receiver.spans_named("evaluation length")
    assert len(runs) == 2
    assert {span.resource["service.name"] for span in runs} == {"ci-eval"}
    assert receiver.log_records() == [] and receiver.metric_points() == []
