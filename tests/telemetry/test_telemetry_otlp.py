"""Real OTLP exporters (gRPC and HTTP/protobuf) deliver spans, metrics and events to a receiver;
an unreachable collector never blocks or breaks scoring, and the export queues stay bounded."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

import scorewatch as sw
from otlp_receiver import OtlpReceiver
from scorewatch import telemetry
from scorewatch.judge import JudgeProviderError
from scorewatch.telemetry import names
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import prompt_scorer, verdicts

pytestmark = pytest.mark.integration

TARGET_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TARGET_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


async def _score_some(expect_failure: bool = True) -> list[sw.core.ScorerRunSnapshot]:
    results: list[sw.core.ScorerRunSnapshot] = []
    results.append(
        await prompt_scorer(ScriptedJudge([verdicts(3), "fine"])).run(
            output="a", run_id="ok-run", target="agent-a"
        )
    )
    results.append(
        await prompt_scorer(ScriptedJudge([verdicts(1), "meh"])).run(
            output="b",
            run_id="live-run",
            score_source="live",
            target_trace_id=TARGET_TRACE,
            target_span_id=TARGET_SPAN,
        )
    )
    if expect_failure:
        with pytest.raises(sw.ScorerRunError) as caught:
            await prompt_scorer(
                ScriptedJudge([JudgeProviderError("nope", code="BAD_REQUEST")])
            ).run(output="c", run_id="failed-run")
        assert caught.value.result is not None
        results.append(caught.value.result)
    return results


def _delivered(receiver: OtlpReceiver) -> bool:
    return (
        len(receiver.spans_named("evaluation quality")) >= 3
        and len(receiver.log_records(names.EVENT_EVALUATION_RESULT)) >= 3
        and bool(receiver.metric_points(names.METRIC_TOKEN_USAGE))
    )


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
async def test_otlp_exporters_deliver_to_the_receiver(
    receiver: OtlpReceiver, protocol: telemetry.OtlpProtocol
) -> None:
    endpoint = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    handle = telemetry.configure(
        service_name="otlp-test",
        prometheus=None,
        otlp=endpoint,
        otlp_protocol=protocol,
        set_global=False,
        metric_export_interval_s=3600,
    )
    try:
        results = await _score_some()
        handle.force_flush()
        receiver.wait_for(_delivered, timeout=20)
    finally:
        handle.shutdown()

    transport = "grpc" if protocol == "grpc" else "http"
    runs = {
        s.attributes["scorewatch.run_id"]: s for s in receiver.spans_named("evaluation quality")
    }
    assert set(runs) == {"ok-run", "live-run", "failed-run"}
    assert {s.transport for s in runs.values()} == {transport}
    assert runs["ok-run"].resource["service.name"] == "otlp-test"
    assert runs["ok-run"].scope == names.INSTRUMENTATION_SCOPE
    assert runs["failed-run"].status_code == "ERROR"
    assert runs["failed-run"].attributes["error.type"] == "BAD_REQUEST"
    assert runs["live-run"].parent_span_id == ""
    assert [(t, s) for t, s, _ in runs["live-run"].links] == [(TARGET_TRACE, TARGET_SPAN)]

    ok = runs["ok-run"]
    steps = [s for s in receiver.spans() if s.parent_span_id == ok.span_id]
    assert sorted(s.name for s in steps) == sorted(
        f"evaluation.step {step}"
        for step in ("preprocess", "analyze", "generate_score", "generate_reason")
    )
    analyze = next(s for s in steps if s.name == "evaluation.step analyze")
    (chat,) = [s for s in receiver.spans() if s.parent_span_id == analyze.span_id]
    assert chat.name == "chat scripted-judge"
    assert chat.kind == "CLIENT"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 10
    assert chat.trace_id == ok.trace_id

    events = {
        r.attributes["scorewatch.run_id"]: r
        for r in receiver.log_records(names.EVENT_EVALUATION_RESULT)
    }
    assert events["ok-run"].attributes["gen_ai.evaluation.score.value"] == 0.75
    assert (events["ok-run"].trace_id, events["ok-run"].span_id) == (ok.trace_id, ok.span_id)
    assert (events["live-run"].trace_id, events["live-run"].span_id) == (TARGET_TRACE, TARGET_SPAN)
    assert events["failed-run"].attributes["error.type"] == "BAD_REQUEST"
    assert "gen_ai.evaluation.score.value" not in events["failed-run"].attributes
    assert events["failed-run"].severity_number == 13  # WARN

    executions = [
        e for r in results for record in (r.judge or {}).values() for e in record.executions
    ]
    tokens = receiver.latest_metric_points(names.METRIC_TOKEN_USAGE)
    assert sum(p.sum or 0 for p in tokens if p.attributes["gen_ai.token.type"] == "input") == sum(
        (e.usage.input_tokens or 0) for e in executions if e.usage is not None
    )
    assert tokens[0].explicit_bounds == list(names.TOKEN_BUCKETS)
    counted = receiver.latest_metric_points(names.METRIC_JUDGE_EXECUTIONS)
    assert sum(p.value or 0 for p in counted) == len(executions)


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
async def test_otlp_is_configured_from_the_standard_environment(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    endpoint = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
    handle = telemetry.configure(prometheus=None, set_global=False)
    try:
        await prompt_scorer(ScriptedJudge([verdicts(2), "ok"])).run(output="x")
        handle.force_flush()
        receiver.wait_for(lambda r: r.spans_named("evaluation quality"), timeout=20)
    finally:
        handle.shutdown()
    (run,) = receiver.spans_named("evaluation quality")
    assert run.resource["service.name"] == "from-env"
    assert run.resource["deployment.environment"] == "test"
    assert run.transport == ("grpc" if protocol == "grpc" else "http")


def test_no_otlp_without_an_endpoint_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("", "TRACES_", "METRICS_", "LOGS_"):
        monkeypatch.delenv(f"OTEL_EXPORTER_OTLP_{key}ENDPOINT", raising=False)
    handle = telemetry.configure(prometheus=None, set_global=False)
    try:
        assert handle.export_queue_lengths() == {"spans": 0, "logs": 0}
        assert not handle.exporters.any
    finally:
        handle.shutdown()


def _rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
async def test_unreachable_collector_never_blocks_and_memory_stays_bounded(
    protocol: telemetry.OtlpProtocol,
) -> None:
    # A listening socket that never accepts: connections hang, like a collector that is down
    # behind a load balancer, which is worse for an exporter than a refused connection.
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(1)
    port = blackhole.getsockname()[1]
    queue_size = 64
    handle = telemetry.configure(
        prometheus=None,
        otlp=f"http://127.0.0.1:{port}",
        otlp_protocol=protocol,
        otlp_timeout_s=1,
        export_queue_size=queue_size,
        metric_export_interval_s=0.5,
        set_global=False,
    )
    try:
        scorer = prompt_scorer(
            ScriptedJudge(lambda request: verdicts(2) if request.schema else "ok")
        )
        for _ in range(300):
            await scorer.run(output="x")
        baseline = _rss_bytes()
        max_queued = {"spans": 0, "logs": 0}
        for index in range(1500):
            result = await scorer.run(output="x")
            assert result.score == 0.5
            if index % 50 == 0:
                for key, length in handle.export_queue_lengths().items():
                    max_queued[key] = max(max_queued[key], length)
        grown = _rss_bytes() - baseline
        # 1,500 runs make 9,000 spans and 1,500 events; only the bounded queues hold any.
        assert 0 < max_queued["spans"] <= queue_size
        assert 0 < max_queued["logs"] <= queue_size
        assert grown < 16 * 1024 * 1024, grown
    finally:
        handle.shutdown()
        blackhole.close()
