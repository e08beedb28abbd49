"""`scorewatch serve` with `[traces]`: real instrumented agents export over OTLP/HTTP to a real
serve process; the spans are assembled, scored through the same intake as `POST /v1/scores`,
stored with the evaluated span's ids and reported as evaluation events parented to it."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from otlp_receiver import OtlpReceiver
from scorewatch.testing.judge_server import LoopbackJudgeServer
from serve_support import ServeProcess
from trace_intake_support import (
    TOKEN,
    TracesServe,
    queued_traces_serve,
    raw_request,
    raw_span,
    start_traces_serve,
    traces_config,
)
from traces_support import (
    chat,
    instrumented,
    otlp_json,
    pydantic_ai_agent_trace,
    run_agent,
)

pytestmark = pytest.mark.e2e


def _start(tmp_path: Path, receiver: OtlpReceiver, **buffer: Any) -> ServeProcess:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_BLRP_SCHEDULE_DELAY": "100",
    }
    return start_traces_serve(tmp_path, traces_config(**buffer), env).process


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver(grpc_enabled=False) as started:
        yield started


@pytest.fixture(scope="module")
def serve(
    tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver
) -> Iterator[TracesServe]:
    process = _start(tmp_path_factory.mktemp("traces-serve"), receiver)
    try:
        yield TracesServe(process)
    finally:
        process.kill()


@pytest.fixture(scope="module")
def llm() -> Iterator[LoopbackJudgeServer]:
    from scorewatch.testing.judge_server import Reply

    with LoopbackJudgeServer(default=Reply("Order 7 shipped on Monday.")) as server:
        yield server


def _lookup(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"order": arguments["id"], "status": "shipped"}


def _protobuf(spans: list[Any]) -> bytes:
    return raw_request(spans).SerializeToString()


def test_an_instrumented_agent_exporting_protobuf_is_scored_in_its_span(
    serve: TracesServe, receiver: OtlpReceiver, llm: LoopbackJudgeServer
) -> None:
    exporter = OTLPSpanExporter(
        endpoint=f"{serve.traces_url}/v1/traces",
        headers={"Authorization": f"Bearer {TOKEN}"},
        compression=Compression.Gzip,
    )
    with instrumented("genai", also=[exporter]) as (tracer, caught):
        run_agent(tracer, llm, "Where is order 7?", [("lookup_order", {"id": 7}, _lookup)])
        spans = caught.get_finished_spans()
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    trace_id = format(agent.context.trace_id, "032x")
    span_id = format(agent.context.span_id, "016x")
    assert {s.attributes.get("gen_ai.operation.name") for s in spans} >= {"chat", "execute_tool"}

    (row,) = serve.rows_for(span_id)  # the agent span, scored once; its model calls are nested
    assert row["traceId"] == trace_id and row["scorerId"] == "length"
    assert row["entityId"] == "shop-agent"
    metadata = json.loads(row["metadata"])
    assert metadata["scoreSource"] == "trace"
    assert metadata["toolCalls"] == ["lookup_order"]
    output = json.loads(row["output"])
    assert output[0]["content"]["content"] == "Order 7 shipped on Monday."
    (tools,) = serve.rows_for(span_id, scorer="tools")
    assert tools["score"] == 1  # the agent called lookup_order
    assert [s["spanId"] for s in serve.rows()].count(span_id) == 2  # once per trace scorer
    # `failing` is configured but not in traces.scorers: never run on traces.
    assert not [r for r in serve.rows() if r["scorerId"] == "failing"]

    def events() -> list[Any]:
        found = receiver.log_records("gen_ai.evaluation.result")
        return [e for e in found if e.span_id == span_id]

    assert receiver.wait_for(lambda _: len(events()) == 2, timeout=20)
    assert {e.trace_id for e in events()} == {trace_id}  # parented to the evaluated span
    assert {e.attributes["gen_ai.evaluation.name"] for e in events()} == {"length", "tools"}

    def run_spans() -> list[Any]:
        found = receiver.spans_named("evaluation length")
        return [s for s in found if s.links and s.links[0][1] == span_id]

    assert receiver.wait_for(lambda _: run_spans(), timeout=20)
    (run_span,) = run_spans()
    assert run_span.attributes["scorewatch.score_source"] == "trace"
    text = serve.wait_metric('scorewatch_traces_runs_total{scorewatch_traces_outcome="admitted"}')
    assert 'scorewatch_evaluation_score_count{gen_ai_evaluation_name="length"' in text
    assert 'scorewatch_traces_runs_total{scorewatch_traces_outcome="nested"}' in text


def _ids(span: Any) -> tuple[str, str]:
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


def test_openinference_spans_as_gzipped_json_are_scored(
    serve: TracesServe, llm: LoopbackJudgeServer
) -> None:
    with instrumented("openinference") as (_, caught):
        chat(llm, [{"role": "user", "content": "Where is order 8?"}])
        spans = caught.get_finished_spans()
    (model_call,) = spans
    trace_id, span_id = _ids(model_call)
    response = serve.post(otlp_json(spans).encode(), "application/json", gzipped=True)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert json.loads(response.content) == {}  # an ExportTraceServiceResponse, nothing refused
    (row,) = serve.rows_for(span_id)
    assert row["traceId"] == trace_id
    assert json.loads(row["metadata"])["convention"] == "openinference"
    assert json.loads(row["input"])["inputMessages"][0]["content"]["content"] == (
        "Where is order 8?"
    )


def test_spans_split_across_requests_and_out_of_order_make_one_run(
    serve: TracesServe, llm: LoopbackJudgeServer
) -> None:
    tools = [("first", {"id": 1}, _lookup), ("second", {"id": 2}, _lookup)]
    with instrumented("genai") as (tracer, caught):
        run_agent(tracer, llm, "Check orders 1 and 2", tools, agent="split-agent")
        spans = caught.get_finished_spans()
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    children = [s for s in spans if s is not agent]
    _, span_id = _ids(agent)
    # The children land first, newest first, one request each, then the agent's own span.
    for child in reversed(children):
        answer = serve.post_spans([child])
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/x-protobuf"
        parsed = ExportTraceServiceResponse.FromString(answer.content)
        assert not parsed.HasField("partial_success")
    assert serve.post_spans([agent]).status_code == 200
    (row,) = serve.rows_for(span_id)
    assert json.loads(row["metadata"])["toolCalls"] == ["first", "second"]
    assert row["entityId"] == "split-agent"
    invocations = json.loads(row["output"])[0]["content"]["toolInvocations"]
    assert [i["toolName"] for i in invocations] == ["first", "second"]
    assert invocations[1]["result"] == {"order": 2, "status": "shipped"}


def test_a_pydantic_ai_agent_is_scored_with_its_tools_in_order(serve: TracesServe) -> None:
    document = json.loads(pydantic_ai_agent_trace())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    (agent,) = [s for s in spans if s["name"] == "invoke_agent shop"]
    answer = serve.post(json.dumps(document).encode(), "application/json")
    assert answer.status_code == 200 and json.loads(answer.content) == {}
    (row,) = serve.rows_for(agent["spanId"], scorer="tools")
    assert row["traceId"] == agent["traceId"] and row["score"] == 1
    assert json.loads(row["metadata"])["toolCalls"] == ["lookup_order", "notify_customer"]


def test_spans_without_content_are_counted_and_not_scored(
    serve: TracesServe, llm: LoopbackJudgeServer
) -> None:
    with instrumented("genai", content=False) as (_, caught):
        chat(llm, [{"role": "user", "content": "Where is order 9?"}])
        spans = caught.get_finished_spans()
    _, span_id = _ids(spans[0])
    assert serve.post_spans(spans).status_code == 200
    serve.wait_metric('scorewatch_traces_runs_total{scorewatch_traces_outcome="no_content"} 1.0')
    assert not [row for row in serve.rows() if row["spanId"] == span_id]
    # Explained in the log, once, with the setting to change in the agent.
    with instrumented("genai", content=False) as (_, caught):
        chat(llm, [{"role": "user", "content": "And order 10?"}])
        more = caught.get_finished_spans()
    assert serve.post_spans(more).status_code == 200
    serve.wait_metric('scorewatch_traces_runs_total{scorewatch_traces_outcome="no_content"} 2.0')
    log = serve.process.stderr()
    assert log.count("selected spans without message content are not scored") == 1, log
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in log


def test_unreadable_bodies_are_refused_and_lose_nothing_else(
    serve: TracesServe, llm: LoopbackJudgeServer
) -> None:
    bad = serve.post(b"\xff\x00 not protobuf", "application/x-protobuf")
    assert bad.status_code == 400
    assert bad.headers["content-type"] == "application/x-protobuf"
    status = Status.FromString(bad.content)
    assert status.code == 3 and "protobuf" in status.message
    bad_json = serve.post(
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', "application/json"
    )
    assert bad_json.status_code == 400
    assert "traceId" in json_format.Parse(bad_json.content, Status()).message
    truncated = serve.post(gzip.compress(b'{"resourceSpans": []}')[:-6], "application/json")
    assert truncated.status_code == 400
    bomb = serve.client.post(
        f"{serve.traces_url}/v1/traces",
        content=gzip.compress(b"{" + b" " * (40 << 20) + b"}"),
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert bomb.status_code == 413  # bounded once decompressed too
    assert serve.post(b"{}", "text/plain").status_code == 415
    unauthenticated = httpx.post(
        f"{serve.traces_url}/v1/traces", content=b"{}", headers={"Content-Type": "application/json"}
    )
    assert unauthenticated.status_code == 401
    # The traces listener serves only /v1/traces; the main one serves it too.
    assert serve.client.get(f"{serve.traces_url}/healthz").status_code == 404
    assert (
        serve.client.post(
            f"{serve.url}/v1/traces", content=b"{}", headers={"Content-Type": "application/json"}
        ).status_code
        == 200
    )
    # A good request after all that is still scored.
    with instrumented("genai") as (_, caught):
        chat(llm, [{"role": "user", "content": "And order 10?"}])
        spans = caught.get_finished_spans()
    _, span_id = _ids(spans[0])
    assert serve.post_spans(spans).status_code == 200
    assert serve.rows_for(span_id)


def test_a_never_completing_trace_is_evicted_and_a_flood_is_asked_to_come_back(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    max_bytes = 200_000
    process = _start(tmp_path, receiver, max_age_s=2.5, max_bytes=max_bytes)
    try:
        serve = TracesServe(process)
        trace = 0xABC
        assert (
            serve.post(
                _protobuf([raw_span(trace, 1, name="invoke_agent busy", payload=10)]),
                "application/x-protobuf",
            ).status_code
            == 200
        )
        for index in range(2, 16):  # a child every 0.25 s: never quiet until it expires
            serve.post(_protobuf([raw_span(trace, index, 1, payload=10)]), "application/x-protobuf")
            time.sleep(0.25)
        serve.wait_metric('scorewatch_traces_evicted_total{scorewatch_traces_reason="max_age"} 1.0')
        serve.wait_metric('scorewatch_traces_runs_total{scorewatch_traces_outcome="evicted"} 1.0')

        refused = accepted = 0
        for request_index in range(40):  # ~2 MB of spans at 10 times the buffer's bound
            spans = [raw_span(0x1000 + request_index, 1 + i, payload=1000) for i in range(50)]
            answer = serve.post(_protobuf(spans), "application/x-protobuf")
            if answer.status_code == 429:  # nothing of it kept: the exporter sends it again
                assert answer.headers["retry-after"] == "1"
                assert "client_share" in Status.FromString(answer.content).message
                refused += 1
                continue
            assert answer.status_code == 200
            kept = ExportTraceServiceResponse.FromString(answer.content)
            assert not kept.HasField("partial_success")
            accepted += 1
        # One client holds at most half the buffer, whole requests of it.
        assert refused >= 30 and accepted * 50 * 1000 <= max_bytes // 2
        stats = serve.client.get(f"{serve.url}/v1/stats").json()
        assert stats["traces_requests_refused_client_share"] == refused
        assert "traces_spans_dropped_max_bytes" not in stats
        assert stats["traces_bytes_held"] <= max_bytes // 2
        assert process.terminate() == 0
        accounting = process.final_accounting()
        assert accounting["traces_requests_refused_client_share"] == refused
        # The agent's trace, and maybe the partial trace its late children started after it.
        assert accounting["traces_evicted_max_age"] >= 1
        assert accounting["traces_runs_evicted"] == 1
    finally:
        process.kill()


def test_trace_runs_go_through_the_redis_queue_to_a_worker(
    tmp_path: Path, receiver: OtlpReceiver, llm: LoopbackJudgeServer
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint,
           "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BLRP_SCHEDULE_DELAY": "100"}  # fmt: skip
    with queued_traces_serve(tmp_path, traces_config(), env) as queued:
        serve, process, worker = queued.serve, queued.serve.process, queued.worker
        with instrumented("genai") as (_, caught):
            chat(llm, [{"role": "user", "content": "Where is order 11?"}])
            spans = caught.get_finished_spans()
        trace_id, span_id = _ids(spans[0])
        answer = serve.post_spans(spans)
        assert answer.status_code == 200
        (row,) = serve.rows_for(span_id, timeout=30)  # written by the worker
        assert row["traceId"] == trace_id
        assert json.loads(row["metadata"])["scoreSource"] == "trace"
        # Acknowledged and deleted by the worker, just after its commit stored the row.
        deadline = time.monotonic() + 10
        while queued.client.xlen(queued.stream) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert queued.client.xlen(queued.stream) == 0
        assert receiver.wait_for(
            lambda r: [
                e for e in r.log_records("gen_ai.evaluation.result") if e.span_id == span_id
            ],
            timeout=20,
        )
        assert worker.terminate() == 0
        assert worker.final_accounting()["scored"] == 2  # both scorers, there, not in serve
        assert process.terminate() == 0
        accounting = process.final_accounting()
        assert accounting["traces_runs_admitted"] == 1 and accounting["sampled"] == 2
        assert accounting["scored"] == 0
