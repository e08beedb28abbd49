"""`/metrics` of the real server process: Prometheus text format on the service's own port,
scraped by the real Prometheus binary."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from prometheus_support import query, running_prometheus
from scorewatch.testing import LoopbackJudgeServer, Reply
from serve_support import (
    JUDGED_AND_LENGTH_SCORERS,
    ServeProcess,
    judge_table,
    wait_idle,
    write_config,
)

pytestmark = pytest.mark.e2e

CONFIG = (
    """\
[server]
{server}

{judge}

"""
    + JUDGED_AND_LENGTH_SCORERS
    + """
[sinks]
sqlite = "scores.db"

[telemetry]
service_name = "scorewatch-test"
metrics_require_token = {protected}
"""
)


@pytest.fixture(scope="module")
def judge() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(default=Reply('{"score": 0.75}')) as server:
        yield server


def start(directory: Path, judge: LoopbackJudgeServer, *, protected: bool = False) -> ServeProcess:
    server = 'auth_token_env = "SW_TEST_TOKEN"' if protected else ""
    body = CONFIG.format(
        server=server,
        judge=judge_table(judge.base_url),
        protected="true" if protected else "false",
    )
    env = {"SW_TEST_JUDGE_BASE": judge.base_url, "SW_TEST_TOKEN": "metrics-token"}
    process = ServeProcess(write_config(directory, body), env=env)
    process.wait_listening()
    return process


def families(text: str) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample_value(family: Any, suffix: str = "", **labels: str) -> float:
    total = 0.0
    for sample in family.samples:
        if sample.name == family.name + suffix and all(
            sample.labels.get(k) == v for k, v in labels.items()
        ):
            total += sample.value
    return total


def score_some(client: httpx.Client, count: int) -> None:
    for index in range(count):
        response = client.post(
            "/v1/scores",
            json={"input": f"q{index}", "output": "answer", "target": "metrics-agent"},
        )
        assert response.status_code == 202
    wait_idle(client)


def test_metrics_are_prometheus_text_on_the_service_port(
    tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    process = start(tmp_path, judge)
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:
            score_some(client, 4)
            client.post("/v1/scores", json={"input": 1, "target": "metrics-agent"})  # a 422
            response = client.get("/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        found = families(response.text)

        decisions = found["scorewatch_live_decisions"]
        assert decisions.type == "counter"
        for scorer in ("judged", "length"):
            assert (
                sample_value(
                    decisions,
                    "_total",
                    gen_ai_evaluation_name=scorer,
                    scorewatch_decision="sampled",
                )
                == 4
            )
        scores = found["scorewatch_evaluation_score"]
        assert scores.type == "histogram"
        assert sample_value(scores, "_count", gen_ai_evaluation_name="judged") == 4
        assert sample_value(scores, "_sum", gen_ai_evaluation_name="judged") == 3.0
        assert sample_value(scores, "_count", gen_ai_evaluation_name="length") == 4
        tokens = found["gen_ai_client_token_usage"]
        assert sample_value(tokens, "_count") == 8  # 4 judge calls x (input, output)
        assert found["scorewatch_live_queue_depth"].type == "gauge"
        assert sample_value(found["scorewatch_live_queue_depth"]) == 0
        assert "scorewatch_live_in_flight" in found
        document = httpx.get(f"{process.url}/openapi.json", timeout=10).json()
        assert "security" not in document["paths"]["/v1/scores"]["post"]  # no token here
    finally:
        process.kill()


def test_metrics_can_require_the_token(tmp_path: Path, judge: LoopbackJudgeServer) -> None:
    process = start(tmp_path, judge, protected=True)
    try:
        denied = httpx.get(f"{process.url}/metrics", timeout=10)
        assert denied.status_code == 401
        assert denied.json()["error"] == "unauthorized"
        allowed = httpx.get(
            f"{process.url}/metrics",
            headers={"Authorization": "Bearer metrics-token"},
            timeout=10,
        )
        assert allowed.status_code == 200
        assert "# TYPE" in allowed.text
        assert httpx.get(f"{process.url}/healthz", timeout=10).status_code == 200
    finally:
        process.kill()


def _wait_for(base: str, expression: str, expected: float, timeout: float = 30.0) -> float:
    deadline = time.monotonic() + timeout
    value = float("nan")
    while time.monotonic() < deadline:
        result = query(base, expression)
        if result:
            value = float(result[0]["value"][1])
            if value == expected:
                return value
        time.sleep(0.25)
    raise AssertionError(f"{expression} = {value}, expected {expected}")


def test_the_real_prometheus_scrapes_the_service(
    prometheus_bin: str, tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    process = start(tmp_path / "serve", judge)
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:
            score_some(client, 5)
        target = process.url.removeprefix("http://")
        # Queried only once Prometheus reports ready (it answers 503 while loading).
        with running_prometheus(
            prometheus_bin, tmp_path / "prometheus", [target], job="scorewatch-serve"
        ) as base:
            _wait_for(base, 'up{job="scorewatch-serve"}', 1.0)
            _wait_for(
                base,
                'sum(scorewatch_live_decisions_total{scorewatch_decision="sampled"})',
                10.0,
            )
            _wait_for(
                base,
                'sum(scorewatch_evaluation_score_count{gen_ai_evaluation_name="judged"})',
                5.0,
            )
            _wait_for(
                base,
                'sum(scorewatch_evaluation_score_sum{gen_ai_evaluation_name="judged"})'
                ' / sum(scorewatch_evaluation_score_count{gen_ai_evaluation_name="judged"})',
                0.75,
            )
    finally:
        process.kill()


def test_sigterm_flushes_the_otlp_exporters(tmp_path: Path, judge: LoopbackJudgeServer) -> None:
    from otlp_receiver import OtlpReceiver

    secret = "OTLP-CONTENT-MARKER-51"
    with OtlpReceiver(grpc_enabled=False) as receiver:
        body = CONFIG.format(server="", judge=judge_table(judge.base_url), protected="false")
        env = {
            "SW_TEST_JUDGE_BASE": judge.base_url,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            # Nothing is exported on a schedule during the test: only the shutdown flush sends.
            "OTEL_BSP_SCHEDULE_DELAY": "600000",
            "OTEL_BLRP_SCHEDULE_DELAY": "600000",
            "OTEL_METRIC_EXPORT_INTERVAL": "600000",
        }
        process = ServeProcess(write_config(tmp_path, body), env=env)
        try:
            process.wait_listening()
            with httpx.Client(base_url=process.url, timeout=30) as client:
                for index in range(3):
                    response = client.post(
                        "/v1/scores",
                        params={"wait": "true"},
                        json={
                            "scorers": ["judged"],
                            "input": secret,
                            "output": secret,
                            "target": "otlp-agent",
                            "trace_id": f"{index + 1:032x}",
                            "span_id": f"{index + 1:016x}",
                        },
                    )
                    assert response.json()["results"][0]["status"] == "success"
            assert receiver.spans_named("evaluation judged") == []
            assert process.terminate() == 0
        finally:
            process.kill()
        runs = receiver.spans_named("evaluation judged")
        assert len(runs) == 3
        assert {span.resource.get("service.name") for span in runs} == {"scorewatch-test"}
        assert all(span.attributes.get("scorewatch.target") == "otlp-agent" for span in runs)
        linked = {link[0] for span in runs for link in span.links}
        assert linked == {f"{i:032x}" for i in (1, 2, 3)}  # the run spans link to the agents'
        events = receiver.log_records("gen_ai.evaluation.result")
        assert len(events) == 3
        assert {event.attributes.get("gen_ai.evaluation.score.value") for event in events} == {0.75}
        assert receiver.metric_points("scorewatch.evaluation.score")
        exported = repr(receiver.spans()) + repr(receiver.log_records())
        assert secret not in exported  # content stays out unless capture_content is on
