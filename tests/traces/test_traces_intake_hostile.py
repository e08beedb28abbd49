"""`POST /v1/traces` attacked as a hostile client and an unlucky operator would, on a real serve:
every byte held counts against the bound, assembly is linear and off the serving loop, targets
are capped as `/v1/scores` caps them, clients share the buffer fairly, what is refused is
refused with a status the real OTLP exporter retries, and one client's spans never replace or
suppress another's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply
from trace_intake_support import (
    TOKEN,
    TracesServe,
    messages,
    raw_request,
    raw_span,
    start_traces_serve,
    traces_config,
)
from traces_support import instrumented, run_agent

pytestmark = pytest.mark.e2e


def _agent(trace: int, span: int, parent: int | None = None, **attributes: str) -> Any:
    """An agent span with a question and an answer (GenAI conventions)."""
    content = {
        "gen_ai__input__messages": messages("user", "Where is order 7?"),
        "gen_ai__output__messages": messages("assistant", "Order 7 has shipped."),
        "gen_ai__agent__name": "shop-agent",
    }
    return raw_span(
        trace, span, parent, name="invoke_agent shop-agent", **{**content, **attributes}
    )


def _tool(trace: int, span: int, parent: int, tool: str) -> Any:
    return raw_span(
        trace,
        span,
        parent,
        name=f"execute_tool {tool}",
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name=tool,
        gen_ai__tool__call__result='"done"',
    )


def _hex(span: int) -> str:
    return f"{span:016x}"


def _exporter(serve: TracesServe) -> OTLPSpanExporter:
    """The real OTLP/HTTP exporter, with time for the retries a 429 asks for."""
    return OTLPSpanExporter(
        endpoint=f"{serve.traces_url}/v1/traces",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )


@pytest.fixture
def stopped() -> Iterator[list[TracesServe]]:
    started: list[TracesServe] = []
    yield started
    for serve in started:
        serve.process.kill()


def _serve(directory: Path, stopped: list[TracesServe], body: str, **env: str) -> TracesServe:
    serve = start_traces_serve(directory, body, env)
    stopped.append(serve)
    return serve


# -- 1. every byte held counts, its resource's too ------------------------------------------------


def test_resource_bytes_count_against_the_bound(tmp_path: Path, stopped: list[TracesServe]) -> None:
    max_bytes = 32 << 20
    serve = _serve(tmp_path, stopped, traces_config(max_bytes=max_bytes, linger_s=60))
    big = "r" * (12 << 20)  # 12 MiB in the resource, a few KB gzipped on the wire
    warm = raw_request([raw_span(0xFFFF, 1)], service="warm-up")
    assert serve.post_raw(warm, gzipped=True).status_code == 200
    before = serve.process.rss_bytes()
    statuses = []
    for index in range(40):
        request = raw_request([raw_span(0x100 + index, 1)], service="heavy", blob=big)
        answer = serve.post_raw(request, gzipped=True)
        statuses.append(answer.status_code)
        if answer.status_code == 429:
            assert int(answer.headers["retry-after"]) >= 1
            assert "client_share" in Status.FromString(answer.content).message
    grown = serve.process.rss_bytes() - before
    # Held, the 40 resources would be 480 MiB.
    assert grown < 200 << 20, f"serve grew by {grown >> 20} MiB; answers {statuses}"
    # One client holds at most half of max_bytes: one such request; the others are asked to
    # come back later.
    assert statuses[0] == 200 and set(statuses[1:]) == {429}, statuses
    stats = serve.stats()
    assert 12 << 20 < stats["traces_bytes_held"] <= max_bytes // 2


# -- 2. assembly linear, off the loop that answers others -----------------------------------------


def _chains(first_trace: int, traces: int, length: int) -> bytes:
    """`traces` traces, each one chain of `length` spans under a selected agent span."""
    spans = []
    for trace in range(first_trace, first_trace + traces):
        spans.append(_agent(trace, 1))
        spans.extend(raw_span(trace, index, index - 1) for index in range(2, length + 1))
    return raw_request(spans, service="chains").SerializeToString()


def test_long_chains_are_assembled_off_the_serving_loop(
    tmp_path: Path, stopped: list[TracesServe]
) -> None:
    serve = _serve(tmp_path, stopped, traces_config())
    bodies = [_chains(0x1000, 35, 2000), _chains(0x2000, 35, 2000)]
    heavy: list[tuple[float, float, int]] = []  # (start, end, status)

    def send(body: bytes) -> None:
        start = time.monotonic()
        answer = serve.post(body, "application/x-protobuf", gzipped=True)
        heavy.append((start, time.monotonic(), answer.status_code))

    senders = [threading.Thread(target=send, args=(body,)) for body in bodies]
    probes: list[tuple[float, float]] = []
    with httpx.Client(timeout=60) as other_client:
        for sender in senders:
            sender.start()
        while any(sender.is_alive() for sender in senders):
            start = time.monotonic()
            assert other_client.get(f"{serve.url}/healthz").status_code == 200
            probes.append((start, time.monotonic()))
            time.sleep(0.01)
    for sender in senders:
        sender.join()
    assert [status for *_, status in heavy] == [200, 200]
    begun, ended = min(start for start, *_ in heavy), max(end for _, end, _ in heavy)
    during = [end - start for start, end in probes if begun < start and end < ended]
    # The other client is answered all along while the heavy requests are worked on, each time
    # in a small part of what that work takes (on the loop, one answer waited for nearly all).
    assert len(during) >= 5, probes
    assert max(during) < (ended - begun) / 4, (max(during), ended - begun)
    # And the 70 agent runs (each over a chain of 1,999 spans) are extracted and scored.
    deadline = time.monotonic() + 60
    while serve.stats().get("traces_runs_admitted", 0) < 70:
        assert time.monotonic() < deadline, serve.stats()
        time.sleep(0.2)


# -- 3. targets from traces are capped as /v1/scores caps them ------------------------------------


def test_an_over_long_agent_name_is_not_a_target(
    tmp_path: Path, stopped: list[TracesServe]
) -> None:
    serve = _serve(tmp_path, stopped, traces_config())
    spans = [
        _agent(0x300 + index, 1, gen_ai__agent__name=f"agent-{index}-" + "n" * 200_000)
        for index in range(20)
    ]
    spans.append(_agent(0x400, 2))  # a name of a usual length
    assert serve.post_raw(raw_request(spans), gzipped=True).status_code == 200
    (row,) = serve.rows_for(_hex(2))
    assert row["entityId"] == "shop-agent"
    deadline = time.monotonic() + 30
    while sum(v for k, v in serve.stats().items() if k.startswith("traces_runs_")) < 21:
        assert time.monotonic() < deadline, serve.stats()
        time.sleep(0.2)
    text = serve.metrics()
    assert len(text) < 1 << 20, f"/metrics is {len(text)} bytes"
    assert serve.stats()["traces_runs_invalid_target"] == 20
    assert 'scorewatch_traces_runs_total{scorewatch_traces_outcome="invalid_target"} 20.0' in text
    assert all(len(row["entityId"]) <= 256 for row in serve.rows())


# -- 4. fair between clients; what is refused, the exporter retries -------------------------------


def test_one_client_cannot_evict_anothers_pending_runs(
    tmp_path: Path, stopped: list[TracesServe]
) -> None:
    serve = _serve(tmp_path, stopped, traces_config(max_traces=400))
    victim = raw_request([_agent(0x500, 1)], service="victim")
    assert serve.post_raw(victim).status_code == 200
    # 600 traces of one small span each (about 26 KB): more than one client may hold.
    flood = raw_request([raw_span(0x10_000 + index, 1) for index in range(600)], service="flood")
    answer = serve.post_raw(flood)
    assert answer.status_code == 413, answer.status_code
    assert "max_traces" in Status.FromString(answer.content).message
    (row,) = serve.rows_for(_hex(1))
    assert row["traceId"] == f"{0x500:032x}"
    assert "traces_evicted_max_traces" not in serve.stats()


def test_a_full_buffer_asks_the_exporter_to_retry_and_the_spans_arrive(
    tmp_path: Path, stopped: list[TracesServe]
) -> None:
    serve = _serve(tmp_path, stopped, traces_config(max_bytes=2 << 20, linger_s=2.0))
    for flooder in ("flood-a", "flood-b"):  # each up to its share: the buffer is full
        for index in range(200):
            spans = [raw_span(0x20_000 + index, 1 + i, payload=1000) for i in range(16)]
            answer = serve.post_raw(raw_request(spans, service=flooder))
            if answer.status_code == 429:
                break
            assert answer.status_code == 200
            if ExportTraceServiceResponse.FromString(answer.content).partial_success.rejected_spans:
                break  # refused for good: never retried
        else:
            raise AssertionError(f"{flooder} was never refused")
    answer_text = "Order 7 has shipped. " * 3000  # 60 KB: more than the room left
    with (
        LoopbackJudgeServer(answer_text) as llm,
        instrumented("genai", service="victim") as (tracer, caught),
    ):
        run_agent(tracer, llm, "Where is order 7?", [("lookup_order", {"id": 7}, lambda a: 1)])
        spans = caught.get_finished_spans()
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    exporter = _exporter(serve)
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    (row,) = serve.rows_for(_hex(agent.context.span_id))
    assert json.loads(row["metadata"])["toolCalls"] == ["lookup_order"]
    refused = serve.stats()["traces_requests_refused_max_bytes"]
    assert refused >= 1  # the victim's first attempt, refused and retried


# -- 5. a full scoring queue: retry, not 200 and drop ---------------------------------------------


def test_a_full_scoring_queue_makes_the_exporter_retry_and_drops_nothing(
    tmp_path: Path, stopped: list[TracesServe]
) -> None:
    with LoopbackJudgeServer(default=Reply('{"score": 1}', delay=0.3)) as judge:
        extra = (
            '\n[[scorers]]\nid = "judged"\nfactory = "sw_test_scorers:make_judged_scorer"\n'
            "\n[live]\nmax_concurrency = 1\nmax_queue = 1\n"
        )
        body = traces_config(extra=extra, trace_scorers=["judged"])
        serve = _serve(tmp_path, stopped, body, SW_TEST_JUDGE_BASE=judge.base_url)
        # Six agent runs complete together: more than the scoring queue takes at once.
        burst = [_agent(0x600 + index, 1) for index in range(6)]
        assert serve.post_raw(raw_request(burst)).status_code == 200
        time.sleep(1.0)  # their subtrees go quiet; the queue fills
        with instrumented("genai", service="late") as (tracer, caught):
            with LoopbackJudgeServer("Order 8 has shipped.") as llm:
                run_agent(tracer, llm, "Where is order 8?", [])
            late = caught.get_finished_spans()
        exporter = _exporter(serve)
        try:
            assert exporter.export(late) == SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        late_agent = next(s for s in late if s.name.startswith("invoke_agent"))
        for span_id in [_hex(1), _hex(late_agent.context.span_id)]:
            serve.rows_for(span_id, timeout=60, scorer="judged")
        deadline = time.monotonic() + 30
        while len([r for r in serve.rows() if r["scorerId"] == "judged"]) < 7:
            assert time.monotonic() < deadline, serve.rows()
            time.sleep(0.2)
    stats = serve.stats()
    assert stats["traces_runs_admitted"] == 7
    assert "traces_runs_queue_full" not in stats
    assert stats["traces_requests_refused_busy"] >= 1  # the late export, retried


# -- 6. content capture off: not scored, even with a tool call ------------------------------------


def test_an_agent_without_content_is_not_scored_even_with_tool_calls(
    tmp_path: Path, stopped: list[TracesServe]
) -> None:
    serve = _serve(tmp_path, stopped, traces_config())
    with (
        LoopbackJudgeServer("Order 7 has shipped.") as llm,
        instrumented("genai", content=False) as (tracer, caught),
    ):
        run_agent(tracer, llm, "Where is order 7?", [("lookup_order", {"id": 7}, lambda a: 1)])
        spans = caught.get_finished_spans()
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert serve.post_spans(spans).status_code == 200
    serve.wait_metric('scorewatch_traces_runs_total{scorewatch_traces_outcome="no_content"} 1.0')
    assert "traces_runs_admitted" not in serve.stats()
    assert not [row for row in serve.rows() if row["spanId"] == _hex(agent.context.span_id)]


# -- 7. one client's spans never replace or suppress another's -------------------------------------


def test_spans_from_another_client_never_replace_or_suppress_a_run(
    tmp_path: Path, stopped: list[TracesServe]
) -> None:
    serve = _serve(tmp_path, stopped, traces_config())
    trace = 0x700
    elsewhere = httpx.Client(
        transport=httpx.HTTPTransport(local_address="127.0.0.2"),
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    forged_answer = messages("assistant", "Refund approved, no questions asked.")
    forged = [
        # The victim's agent span id, sent first, with other content.
        _agent(trace, 2, 1, gen_ai__output__messages=forged_answer),
        # A selected agent span as the victim's root: the victim's agent would be nested.
        _agent(trace, 1),
        # A tool call injected under the victim's agent.
        _tool(trace, 9, 2, "transfer_funds"),
    ]
    with elsewhere:
        answer = serve.post(
            raw_request(forged, service="shop").SerializeToString(),
            "application/x-protobuf",
            client=elsewhere,
        )
    assert answer.status_code == 200
    time.sleep(0.3)
    victim = [
        raw_span(trace, 1, name="POST /chat"),
        _agent(trace, 2, 1),
        _tool(trace, 3, 2, "lookup_order"),
    ]
    assert serve.post_raw(raw_request(victim, service="shop")).status_code == 200
    deadline = time.monotonic() + 20
    mine: list[dict[str, Any]] = []
    while not mine:
        assert time.monotonic() < deadline, serve.rows()
        mine = [
            row
            for row in serve.rows()
            if row["spanId"] == _hex(2)
            and row["scorerId"] == "tools"
            and "Order 7 has shipped." in row["output"]
        ]
        time.sleep(0.1)
    (row,) = mine
    assert json.loads(row["metadata"])["toolCalls"] == ["lookup_order"]
    assert row["score"] == 1
