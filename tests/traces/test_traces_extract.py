"""Span → run with real producers: the official GenAI instrumentation and OpenInference
instrumenting a real `openai` client against the loopback server, encoded by the OTLP
exporter's encoder (protobuf, and OTLP/JSON with hex ids)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from scorewatch.scorers.tool_call_accuracy_code import create_tool_call_accuracy_code_scorer
from scorewatch.scorers.utils import (
    extract_tool_calls,
    extract_tool_results,
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_user_message_from_run_input,
    is_scorer_run_input_for_agent,
    is_scorer_run_output_for_agent,
)
from scorewatch.testing.judge_server import LoopbackJudgeServer
from scorewatch.traces import ExtractedRun, SpanSelector, extract_runs, parse_json
from traces_support import (
    Producer,
    chat,
    chat_in_subprocess,
    instrumented,
    otlp_json,
    protobuf_request,
    run_agent,
)

pytestmark = pytest.mark.integration

PRODUCERS: list[Producer] = ["genai", "openinference"]
CONVENTION = {"genai": "gen_ai", "openinference": "openinference"}


def _ids(span: ReadableSpan) -> tuple[str, str]:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def _lookup(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"order": arguments["id"], "status": "shipped"}


def _agent_spans(producer: Producer, *, content: bool = True) -> list[ReadableSpan]:
    with (
        LoopbackJudgeServer("Order 7 has shipped.") as server,
        instrumented(producer, content=content) as (tracer, exporter),
    ):
        run_agent(
            tracer,
            server,
            "Where is order 7?",
            [
                ("lookup_order", {"id": 7}, _lookup),
                ("notify_customer", {"to": "ann"}, lambda a: "sent"),
            ],
        )
        return list(exporter.get_finished_spans())


@pytest.mark.parametrize("producer", PRODUCERS)
def test_a_model_call_becomes_a_run_in_both_encodings(producer: Producer) -> None:
    with (
        LoopbackJudgeServer("The capital is Paris.") as server,
        instrumented(producer) as (
            _,
            exporter,
        ),
    ):
        chat(
            server,
            [
                {"role": "system", "content": "Answer in one sentence."},
                {"role": "user", "content": "What is the capital of France?"},
                {"role": "assistant", "content": "Do you mean today?"},
                {"role": "user", "content": "Yes, today."},
            ],
        )
    spans = list(exporter.get_finished_spans())
    assert len(spans) == 1
    from_protobuf = extract_runs(protobuf_request(spans))
    from_json = extract_runs(otlp_json(spans))
    assert from_protobuf.runs == from_json.runs
    (run,) = from_json.runs
    assert (run.trace_id, run.span_id) == _ids(spans[0])
    assert run.convention == CONVENTION[producer]
    assert is_scorer_run_input_for_agent(run.input)
    assert is_scorer_run_output_for_agent(run.output)
    assert get_user_message_from_run_input(run.input) == "Yes, today."
    remembered = [m["content"]["content"] for m in run.input["rememberedMessages"]]
    assert remembered == ["What is the capital of France?", "Do you mean today?"]
    assert get_combined_system_prompt(run.input) == "Answer in one sentence."
    assert get_assistant_message_from_run_output(run.output) == "The capital is Paris."
    fields = run.scorer_run()
    assert fields.score_source == "trace"
    assert (fields.target_trace_id, fields.target_span_id) == _ids(spans[0])
    assert fields.target == "shop-agent"  # the resource's service name, no agent name given


def test_openllmetry_model_call_becomes_a_run() -> None:
    # OpenLLMetry's current releases write the GenAI semantic conventions' message attributes.
    document = chat_in_subprocess(
        "openllmetry",
        [
            {"role": "system", "content": "Answer in one sentence."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
    )
    (run,) = extract_runs(document).runs
    assert run.convention == "gen_ai" and run.span_name == "openai.chat"
    assert get_user_message_from_run_input(run.input) == "What is the capital of France?"
    assert get_combined_system_prompt(run.input) == "Answer in one sentence."
    assert get_assistant_message_from_run_output(run.output) == "The capital is Paris."
    assert json.loads(document)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == (
        run.trace_id
    )


@pytest.mark.parametrize("producer", PRODUCERS)
async def test_an_agent_run_holds_its_tool_spans_calls_in_order(producer: Producer) -> None:
    spans = _agent_spans(producer)
    extraction = extract_runs(otlp_json(spans))
    # The model calls inside the agent are selected too, but not scored twice by default.
    assert extraction.skipped == {"nested": 2}
    (run,) = extraction.runs
    agent = next(s for s in spans if s.name == "invoke_agent shop-agent")
    assert (run.trace_id, run.span_id) == _ids(agent)
    assert run.agent == "shop-agent" and run.entity_type == "agent"
    assert run.tool_calls == ["lookup_order", "notify_customer"]
    assert extract_tool_calls(run.output).tools == ["lookup_order", "notify_customer"]
    results = extract_tool_results(run.output)
    assert [(r.tool_call_id, r.args, r.result) for r in results] == [
        ("call_0", {"id": 7}, {"order": 7, "status": "shipped"}),
        ("call_1", {"to": "ann"}, "sent"),
    ]
    assert get_user_message_from_run_input(run.input) == "Where is order 7?"
    assert get_assistant_message_from_run_output(run.output) == "Order 7 has shipped."
    parts = run.output[0]["content"]["parts"]
    assert [p["type"] for p in parts] == ["tool-invocation", "tool-invocation", "text"]
    in_order = create_tool_call_accuracy_code_scorer(
        expected_tool_order=["lookup_order", "notify_customer"], strict_mode=True
    )
    reversed_order = create_tool_call_accuracy_code_scorer(
        expected_tool_order=["notify_customer", "lookup_order"], strict_mode=True
    )
    assert (await in_order.run(run.scorer_run())).score == 1
    assert (await reversed_order.run(run.scorer_run())).score == 0


def test_nested_model_calls_are_scored_when_the_selector_asks() -> None:
    spans = _agent_spans("genai")
    select = [
        SpanSelector(operation=["invoke_agent"]),
        SpanSelector(operation=["chat"], nested=True),
    ]
    extraction = extract_runs(otlp_json(spans), select=select)
    names = sorted(run.span_name for run in extraction.runs)
    assert names == ["chat gpt-4o-mini", "chat gpt-4o-mini", "invoke_agent shop-agent"]
    assert "nested" not in extraction.skipped


@pytest.mark.parametrize("producer", PRODUCERS)
def test_content_capture_off_is_counted_not_scored(producer: Producer) -> None:
    spans = _agent_spans(producer, content=False)
    chats = [s for s in spans if "invoke_agent" not in s.name and "execute_tool" not in s.name]
    assert len(chats) == 2
    only_chats = extract_runs(otlp_json(chats))
    assert only_chats.runs == []
    assert only_chats.skipped == {"no_content": 2}
    assert {(s.trace_id, s.span_id) for s in only_chats.skipped_spans} == {_ids(s) for s in chats}


def test_an_agent_without_captured_content_is_not_scored_for_its_tool_calls() -> None:
    # The tool spans (the application's own) still say what was called, but no text of the
    # conversation is there: a run of them would be scored on empty text.
    spans = _agent_spans("genai", content=False)
    extraction = extract_runs(otlp_json(spans))
    assert extraction.runs == []
    assert extraction.skipped == {"no_content": 1, "nested": 2}
    (agent,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert [(s.trace_id, s.span_id) for s in extraction.skipped_spans] == [_ids(agent)]


def _span_json(attributes: dict[str, Any], events: list[dict[str, Any]] | None = None) -> str:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"stringValue": v if isinstance(v, str) else json.dumps(v)}

    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "llm",
        "kind": 3,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
        "events": [
            {
                "name": e["name"],
                "timeUnixNano": "1700000000500000000",
                "attributes": [{"key": k, "value": value(v)} for k, v in e["attrs"].items()],
            }
            for e in events or []
        ],
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}
    return json.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}
    )


def _only_run(document: str) -> ExtractedRun:
    extraction = extract_runs(document)
    assert extraction.skipped == {}
    (run,) = extraction.runs
    assert (run.trace_id, run.span_id) == ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")
    return run


def test_openllmetry_prompt_and_completion_attributes() -> None:
    run = _only_run(
        _span_json(
            {
                "llm.request.type": "chat",
                "gen_ai.system": "openai",
                "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "Be terse.",
                "gen_ai.prompt.1.role": "user",
                "gen_ai.prompt.1.content": "Weather in Oslo?",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.finish_reason": "tool_calls",
                "gen_ai.completion.0.tool_calls.0.name": "forecast",
                "gen_ai.completion.0.tool_calls.0.id": "call_a",
                "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Oslo"}',
            }
        )
    )
    assert run.convention == "openllmetry"
    assert get_user_message_from_run_input(run.input) == "Weather in Oslo?"
    assert get_combined_system_prompt(run.input) == "Be terse."
    assert run.tool_calls == ["forecast"]
    (invocation,) = run.output[0]["content"]["toolInvocations"]
    assert invocation == {
        "toolCallId": "call_a",
        "toolName": "forecast",
        "toolId": "forecast",
        "args": {"city": "Oslo"},
        "result": None,
        "state": "call",
    }


def test_semconv_per_message_events() -> None:
    events = [
        {"name": "gen_ai.system.message", "attrs": {"content": "Be kind."}},
        {"name": "gen_ai.user.message", "attrs": {"content": "Hi there"}},
        {
            "name": "gen_ai.choice",
            "attrs": {"gen_ai.event.content": {"index": 0, "message": {"content": "Hello!"}}},
        },
    ]
    run = _only_run(_span_json({"gen_ai.operation.name": "chat"}, events))
    assert run.convention == "gen_ai_events"
    assert get_user_message_from_run_input(run.input) == "Hi there"
    assert get_combined_system_prompt(run.input) == "Be kind."
    assert get_assistant_message_from_run_output(run.output) == "Hello!"


def test_semconv_system_instructions_and_tool_call_parts() -> None:
    run = _only_run(
        _span_json(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system_instructions": [{"type": "text", "content": "You sell shoes."}],
                "gen_ai.input.messages": [
                    {"role": "user", "parts": [{"type": "text", "content": "Size 42?"}]},
                    {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "tool_call",
                                "id": "c1",
                                "name": "stock",
                                "arguments": {"size": 42},
                            }
                        ],
                    },
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": "c1", "response": "3 pairs"}
                        ],
                    },
                ],
                "gen_ai.output.messages": [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "We have 3 pairs."}],
                    }
                ],
            }
        )
    )
    assert get_combined_system_prompt(run.input) == "You sell shoes."
    assert get_user_message_from_run_input(run.input) == "Size 42?"
    results = extract_tool_results(run.output)
    assert [(r.tool_name, r.args, r.result) for r in results] == [
        ("stock", {"size": 42}, "3 pairs")
    ]
    assert get_assistant_message_from_run_output(run.output) == "We have 3 pairs."


def test_a_failed_call_with_only_an_input_is_skipped_as_no_output() -> None:
    document = _span_json(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [
                {"role": "user", "parts": [{"type": "text", "content": "x"}]}
            ],
        }
    )
    extraction = extract_runs(document)
    assert extraction.runs == [] and extraction.skipped == {"no_output": 1}


def test_a_span_nothing_selects_is_not_a_run() -> None:
    document = _span_json({"http.request.method": "GET", "input.value": "hello"})
    extraction = extract_runs(document)
    assert extraction.runs == [] and extraction.skipped == {}
    assert parse_json(document).resource_spans[0].scope_spans[0].spans[0].name == "llm"
