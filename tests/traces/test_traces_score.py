"""`score_traces`: runs found in real instrumented traces (a Collector `file` exporter file,
plain and gzipped) scored through the evals path; every result names its span."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from scorewatch.evals import ExperimentSinkWriter, RunOutcome
from scorewatch.scorers.registry import build_scorer
from scorewatch.scorers.tool_call_accuracy_code import create_tool_call_accuracy_code_scorer
from scorewatch.sinks import SqliteSink
from scorewatch.testing.judge_server import LoopbackJudgeServer
from scorewatch.traces import SpanSelector, score_traces, score_traces_sync
from traces_support import order_agent_spans, order_claims_judge, otlp_json, protobuf_request

pytestmark = pytest.mark.integration

SECRET = "sk-loopback-traces-7731"


def _ids(span: ReadableSpan) -> tuple[str, str]:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


@pytest.mark.parametrize("compressed", [False, True])
async def test_file_exporter_traces_scored_with_span_ids(tmp_path: Path, compressed: bool) -> None:
    spans = order_agent_spans(2)
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    # The file exporter writes one export request per line; the spans come in several of them.
    lines = [otlp_json([span]) for span in spans]
    path = tmp_path / ("traces.json.gz" if compressed else "traces.json")
    text = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(text) if compressed else text)
    outcomes: list[RunOutcome] = []
    with LoopbackJudgeServer(order_claims_judge) as judge:
        faithfulness = build_scorer(
            "faithfulness",
            model="openai/loopback-judge",
            model_options={"api_base": judge.base_url, "api_key": SECRET, "timeout": 10.0},
        )
        order = create_tool_call_accuracy_code_scorer(
            expected_tool_order=["lookup_order", "notify_customer"]
        )
        scored = await score_traces(
            [faithfulness, order], path, concurrency=2, on_result=outcomes.append
        )
        prompts = [str(r.messages[-1]["content"]) for r in judge.requests]
    assert [(s.trace_id, s.span_id) for s in scored.spans] == [_ids(a) for a in agents]
    assert scored.skipped == {"nested": 4} and scored.dropped == {}
    assert scored.scores == {faithfulness.id: 1.0, order.id: 1.0}
    for span in scored.spans:
        assert span.tool_calls == ["lookup_order", "notify_customer"]
        assert span.results[order.id].score == 1
        assert span.results[faithfulness.id].score == 1
    # The tool results are the context faithfulness judges the answer against.
    analyze = [p for p in prompts if p.startswith("Judge each claim against the context")]
    assert len(analyze) == 2
    for prompt in analyze:
        # Tool results are compact JSON, as the reference writes them (JSON.stringify).
        assert '[0] lookup_order: {"status":"shipped"}\n[1] notify_customer: sent' in prompt
    assert len(outcomes) == 4
    for outcome in outcomes:
        assert outcome.result is not None
        assert outcome.result.score_source == "trace"
        assert (outcome.result.target_trace_id, outcome.result.target_span_id) in {
            _ids(a) for a in agents
        }
        assert outcome.result.target_correlation_context == {
            "traceId": outcome.result.target_trace_id,
            "spanId": outcome.result.target_span_id,
        }
        assert SECRET not in json.dumps(outcome.result.model_dump(mode="json", by_alias=True))


def test_content_capture_off_scores_nothing_and_says_why() -> None:
    spans = order_agent_spans(1, content=False)
    chats = [s for s in spans if s.name.startswith("chat")]
    order = create_tool_call_accuracy_code_scorer(expected_tool="lookup_order")
    scored = score_traces_sync([order], protobuf_request(chats))
    assert scored.spans == [] and scored.scores == {}
    assert scored.skipped == {"no_content": 2}
    assert scored.summary.total_items == 0


def test_selection_picks_the_spans_scored() -> None:
    spans = order_agent_spans(1)
    order = create_tool_call_accuracy_code_scorer(expected_tool="lookup_order")
    scored = score_traces_sync(
        [order], protobuf_request(spans), select=[SpanSelector(operation=["chat"], nested=True)]
    )
    assert [s.span_name for s in scored.spans] == ["chat gpt-4o-mini", "chat gpt-4o-mini"]
    # A model call made before the tools ran saw no tool call: the scorer says 0, not an error.
    assert [s.results[order.id].score for s in scored.spans] == [0, 0]
    assert all(s.results[order.id].error is None for s in scored.spans)


def test_trace_scores_stored_through_the_experiment_writer_name_their_span(tmp_path: Path) -> None:
    spans = order_agent_spans(1)
    (agent,) = [s for s in spans if s.name.startswith("invoke_agent")]
    order = create_tool_call_accuracy_code_scorer(expected_tool="lookup_order")
    sink = SqliteSink(tmp_path / "scores.db")
    writer = ExperimentSinkWriter([sink], experiment_id="traces-1")
    scored = score_traces_sync([order], protobuf_request(spans), on_result=writer)
    rows = sink.query()
    asyncio.run(writer.aclose())
    assert writer.written == 1 and writer.errors == {}
    (row,) = rows
    (span,) = scored.spans
    assert (row["traceId"], row["spanId"]) == _ids(agent) == (span.trace_id, span.span_id)
    assert row["source"] == "TEST" and row["status"] == "success" and row["score"] == 1
    assert row["entityId"] == row["target"] == span.agent
    assert row["metadata"]["experimentId"] == "traces-1"
    assert row["metadata"]["spanName"] == span.span_name
    assert row["input"] is not None and row["output"] is not None
