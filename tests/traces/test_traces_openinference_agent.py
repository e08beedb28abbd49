"""An agent traced the OpenInference way: its function under `OITracer.agent`, its tools under
`OITracer.tool` (AGENT and TOOL spans written by `openinference-instrumentation`'s own tracer)
and its model calls recorded by `openinference-instrumentation-openai` against the loopback
server. The run built from the AGENT span holds the TOOL spans' calls in order, with arguments
and results, so the README's claim about OpenInference tool spans is a tested one."""

from __future__ import annotations

from typing import Any

import pytest
from openinference.instrumentation import OITracer, TraceConfig
from opentelemetry.sdk.trace import ReadableSpan

from scorewatch.scorers.tool_call_accuracy_code import create_tool_call_accuracy_code_scorer
from scorewatch.scorers.utils import (
    extract_tool_results,
    get_assistant_message_from_run_output,
    get_user_message_from_run_input,
)
from scorewatch.testing.judge_server import LoopbackJudgeServer
from scorewatch.traces import extract_runs, score_traces_sync
from traces_support import chat, instrumented, otlp_json

pytestmark = pytest.mark.integration


def _agent_spans() -> list[ReadableSpan]:
    with (
        LoopbackJudgeServer("Order 7 has shipped; Ann was told.") as server,
        instrumented("openinference") as (plain, exporter),
    ):
        tracer = OITracer(plain, config=TraceConfig())

        @tracer.tool
        def lookup_order(order_id: int) -> dict[str, Any]:
            return {"order": order_id, "status": "shipped"}

        @tracer.tool
        def notify_customer(name: str) -> str:
            return f"told {name}"

        @tracer.agent(name="shop-agent")
        def answer(question: str) -> str:
            chat(server, [{"role": "user", "content": question}])
            lookup_order(7)
            notify_customer("ann")
            return chat(server, [{"role": "user", "content": question}])

        answer("Where is order 7?")
        return list(exporter.get_finished_spans())


def test_openinference_agent_and_tool_spans_make_one_run_with_its_tools_in_order() -> None:
    spans = _agent_spans()
    kinds = [span.attributes.get("openinference.span.kind") for span in spans if span.attributes]
    assert sorted(kinds) == ["AGENT", "LLM", "LLM", "TOOL", "TOOL"]
    extraction = extract_runs(otlp_json(spans))
    assert extraction.skipped == {"nested": 2}  # the model calls inside the agent
    (run,) = extraction.runs
    agent = next(s for s in spans if s.attributes.get("openinference.span.kind") == "AGENT")
    context = agent.get_span_context()
    assert context is not None
    assert (run.trace_id, run.span_id) == (f"{context.trace_id:032x}", f"{context.span_id:016x}")
    assert run.entity_type == "agent"
    assert run.tool_calls == ["lookup_order", "notify_customer"]
    results = extract_tool_results(run.output)
    assert [(r.tool_name, r.args, r.result) for r in results] == [
        ("lookup_order", {"order_id": 7}, {"order": 7, "status": "shipped"}),
        ("notify_customer", {"name": "ann"}, "told ann"),
    ]
    assert get_user_message_from_run_input(run.input) == "Where is order 7?"
    assert get_assistant_message_from_run_output(run.output) == (
        "Order 7 has shipped; Ann was told."
    )
    in_order = create_tool_call_accuracy_code_scorer(
        expected_tool_order=["lookup_order", "notify_customer"], strict_mode=True
    )
    scored = score_traces_sync([in_order], otlp_json(spans))
    assert scored.scores == {in_order.id: 1.0}
