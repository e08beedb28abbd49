"""`OTEL_{TRACES,METRICS,LOGS}_EXPORTER` (`otlp`, `console`, `none`, comma lists) decide the push
exporters of `configure()`, and so of `scorewatch serve` and `scorewatch worker`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from otlp_receiver import OtlpReceiver
from scorewatch import telemetry
from scorewatch.testing import ScriptedJudge
from serve_support import ServeProcess, write_config
from telemetry_helpers import prompt_scorer, verdicts

pytestmark = pytest.mark.e2e

_VARIABLES = [
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    *(f"OTEL_EXPORTER_OTLP_{s}ENDPOINT" for s in ("", "TRACES_", "METRICS_", "LOGS_")),
]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver(grpc_enabled=False) as running:
        yield running


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_plan_follows_the_standard_variables(clean_env: pytest.MonkeyPatch) -> None:
    plan = telemetry.export_plan
    assert plan(None) == telemetry.ExportPlan()  # nothing asked, nothing pushed
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert plan(None) == telemetry.ExportPlan(("otlp",), ("otlp",), ("otlp",))
    clean_env.setenv("OTEL_TRACES_EXPORTER", "none")
    clean_env.setenv("OTEL_METRICS_EXPORTER", " Console , otlp,prometheus")
    clean_env.setenv("OTEL_LOGS_EXPORTER", "console")
    assert plan(None) == telemetry.ExportPlan((), ("console", "otlp"), ("console",))
    # The programmatic choice wins over the environment.
    assert plan(False) == telemetry.ExportPlan((), ("console",), ("console",))
    assert plan(True) == telemetry.ExportPlan(("otlp",), ("console", "otlp"), ("otlp", "console"))
    clean_env.setenv("OTEL_LOGS_EXPORTER", "none,otlp")  # `none` wins
    assert plan(None).logs == ()


async def test_none_exports_nothing_of_that_signal(
    receiver: OtlpReceiver, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http_endpoint)
    clean_env.setenv("OTEL_TRACES_EXPORTER", "none")
    clean_env.setenv("OTEL_LOGS_EXPORTER", "otlp,console")
    handle = telemetry.configure(prometheus=None, set_global=False)
    try:
        await prompt_scorer(ScriptedJudge([verdicts(2), "ok"])).run(output="x")
        handle.force_flush()
        receiver.wait_for(
            lambda r: (
                r.log_records("gen_ai.evaluation.result")
                and r.metric_points("scorewatch.evaluation.score")
            ),
            timeout=20,
        )
    finally:
        handle.shutdown()
    assert receiver.spans() == []
    assert handle.exporters == telemetry.ExportPlan((), ("otlp",), ("otlp", "console"))


_CONSOLE_PROCESS = """
import scorewatch as sw
from scorewatch import telemetry

handle = telemetry.configure(prometheus=None)
sw.create_scorer(id="printed", description="d").generate_score(lambda ctx: 0.5).run_sync(output="x")
handle.shutdown()
"""


def test_console_prints_each_signal_it_is_listed_for(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in _VARIABLES}
    env.update(
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="console",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    done = subprocess.run(
        [sys.executable, "-c", _CONSOLE_PROCESS],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "evaluation printed"' in done.stdout
    assert '"event_name": "gen_ai.evaluation.result"' in done.stdout
    assert "scorewatch.evaluation.score" not in done.stdout  # metrics: none


SERVE_CONFIG = """\
[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[telemetry]
service_name = "env-exporters"
"""


def test_serve_honours_the_exporter_variables(receiver: OtlpReceiver, tmp_path: Path) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
    }
    process = ServeProcess(write_config(tmp_path, SERVE_CONFIG), env=env)
    try:
        process.wait_listening()
        with httpx.Client(base_url=process.url, timeout=30) as client:
            response = client.post(
                "/v1/scores",
                params={"wait": "true"},
                json={"scorers": ["length"], "input": "q", "output": "an output", "target": "a"},
            )
            assert "results" in response.json(), response.text
            assert response.json()["results"][0]["status"] == "success"
            # The Prometheus endpoint is configured by [telemetry] prometheus, not these.
            assert "scorewatch_evaluation_score_count" in client.get("/metrics").text
        assert process.terminate() == 0
    finally:
        process.kill()
    receiver.wait_for(lambda r: r.spans_named("evaluation length"), timeout=20)
    assert receiver.log_records() == []
    assert receiver.metric_points() == []


@pytest.fixture
def queue_names() -> Iterator[tuple[str, str]]:
    """(stream key, PostgreSQL schema) for one worker test; removed afterwards."""
    import psycopg
    import redis

    from scale_support import (
        PG_DSN,
        REDIS_URL,
        require_postgres,
        require_redis,
        unique_prefix,
    )

    require_redis()
    require_postgres()
    prefix = unique_prefix()
    schema = prefix.replace("-", "_")
    yield f"{prefix}:work", schema
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def test_worker_honours_the_exporter_variables(
    receiver: OtlpReceiver, tmp_path: Path, queue_names: tuple[str, str]
) -> None:
    from scale_support import REDIS_URL, WorkerProcess, scale_config

    stream, schema = queue_names
    config = scale_config(
        tmp_path, stream=stream, schema=schema, factories={"length": "make_length_scorer"}
    )
    # The shared test config turns OTLP off; here the environment decides.
    config.write_text(config.read_text().replace("otlp = false\n", ""), encoding="utf-8")
    worker = WorkerProcess(
        config,
        name="env",
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_TRACES_EXPORTER": "none",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "otlp",
        },
    )
    try:
        with ServeProcess(config, extra_args=("--queue", REDIS_URL)) as serve:
            worker.wait_consuming()
            with httpx.Client(base_url=serve.url, timeout=30) as client:
                items = [{"input": "q", "output": f"answer {i}", "target": "bot"} for i in range(3)]
                answer = client.post("/v1/scores:batch", json={"items": items})
                assert answer.status_code == 202, answer.text
            receiver.wait_for(lambda r: len(r.log_records("gen_ai.evaluation.result")) == 3, 60)
            assert serve.terminate() == 0
        assert worker.terminate() == 0
    finally:
        worker.kill9()
    assert receiver.spans() == []
    assert receiver.metric_points() == []
    events = receiver.log_records("gen_ai.evaluation.result")
    assert {e.resource["service.name"] for e in events} == {"scorewatch-worker"}
