"""Real instrumented spans for the trace tests: an `openai` client instrumented by the official
GenAI instrumentation, by OpenInference or by OpenLLMetry, talking to the loopback
OpenAI-compatible server, its spans captured by the SDK's in-memory exporter and encoded by the
OTLP exporter's own encoder."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import openai
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

Producer = Literal["genai", "openinference", "openllmetry"]

_GENAI_ENV = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    # This instrumentation's spelling of "capture content on spans" (it rejects "true").
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
}


@contextmanager
def _env(values: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def instrumented(
    producer: Producer,
    *,
    content: bool = True,
    service: str = "shop-agent",
    also: Sequence[SpanExporter] = (),
) -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    """A tracer and the exporter catching its spans, with `openai` instrumented meanwhile;
    `also` get every span too (e.g. the SDK's OTLP exporter)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for other in also:
        provider.add_span_processor(SimpleSpanProcessor(other))
    instrumentor: Any
    if producer == "genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        env = dict(_GENAI_ENV)
        if not content:
            env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "NO_CONTENT"
        instrumentor = OpenAIInstrumentor()
    elif producer == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as TraceloopInstrumentor

        env = {"TRACELOOP_TRACE_CONTENT": "true" if content else "false"}
        instrumentor = TraceloopInstrumentor()
    else:
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        env = {
            "OPENINFERENCE_HIDE_INPUTS": "false" if content else "true",
            "OPENINFERENCE_HIDE_OUTPUTS": "false" if content else "true",
        }
        instrumentor = OIInstrumentor()
    with _env(env):
        instrumentor.instrument(tracer_provider=provider)
        try:
            yield provider.get_tracer("agent-app"), exporter
        finally:
            instrumentor.uninstrument()
            provider.shutdown()


def chat_in_subprocess(producer: Producer, messages: Sequence[Mapping[str, Any]]) -> str:
    """The OTLP/JSON of one instrumented model call made in a fresh interpreter.

    OpenLLMetry's instrumentation does not fully undo itself on `uninstrument()` (the next
    instrumentation of the same client in the process records no spans), so it runs apart.
    """
    script = (
        "import json, sys\n"
        "from traces_support import LoopbackJudgeServer, chat, instrumented, otlp_json\n"
        "producer, messages = json.loads(sys.argv[1])\n"
        "with LoopbackJudgeServer('The capital is Paris.') as server, "
        "instrumented(producer) as (_, exporter):\n"
        "    chat(server, messages)\n"
        "print(otlp_json(exporter.get_finished_spans()))\n"
    )
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run(
        [sys.executable, "-c", script, json.dumps([producer, list(messages)])],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout.strip().splitlines()[-1]


def chat(
    server: LoopbackJudgeServer, messages: Sequence[Mapping[str, Any]], model: str = "gpt-4o-mini"
) -> str:
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test-not-a-key", max_retries=0)
    reply = client.chat.completions.create(model=model, messages=list(messages))  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def protobuf_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """What the OTLP exporter sends for these spans (its own encoder), parsed back from bytes."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(encode_spans(spans).SerializeToString())
    return request


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: base64.b64decode(value).hex()
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str)
            else _hex_ids(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


def otlp_json(spans: Sequence[ReadableSpan]) -> str:
    """The OTLP/JSON encoding of the exporter's request (hex ids, as the Collector writes it)."""
    return json.dumps(_hex_ids(MessageToDict(encode_spans(spans))))


def run_agent(
    tracer: Tracer,
    server: LoopbackJudgeServer,
    question: str,
    tools: Sequence[tuple[str, dict[str, Any], Callable[[dict[str, Any]], Any]]],
    agent: str = "shop-agent",
    attributes: Mapping[str, Any] | None = None,
) -> None:
    """An agent in the GenAI conventions: an `invoke_agent` span (with `attributes` too)
    around the instrumented model calls and an `execute_tool` span per tool it runs."""
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        **(attributes or {}),
    }
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes):
        messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
        chat(server, messages)
        for index, (name, arguments, tool) in enumerate(tools):
            with tracer.start_as_current_span(
                f"execute_tool {name}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": f"call_{index}",
                    "gen_ai.tool.call.arguments": json.dumps(arguments),
                },
            ) as span:
                result = tool(arguments)
                span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        chat(server, [*messages, {"role": "user", "content": "Summarise."}])


def order_agent_spans(count: int, *, content: bool = True) -> list[ReadableSpan]:
    """The finished spans of `count` runs of a shop agent (two tool calls) instrumented by
    openai-v2 against the loopback LLM; `content=False` exports no message content."""
    with (
        LoopbackJudgeServer("Order 7 has shipped.") as server,
        instrumented("genai", content=content) as (tracer, exporter),
    ):
        for _ in range(count):
            run_agent(
                tracer,
                server,
                "Where is order 7?",
                [
                    ("lookup_order", {"id": 7}, lambda a: {"status": "shipped"}),
                    ("notify_customer", {"to": "ann"}, lambda a: "sent"),
                ],
            )
        return list(exporter.get_finished_spans())


def pydantic_ai_agent_trace() -> str:
    """The OTLP/JSON of a pydantic-ai agent run (its own instrumentation) calling two tools."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from scorewatch.testing.judge_server import Reply, ToolCallReply

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = [
        Reply(tool_calls=[ToolCallReply("lookup_order", {"order_id": 7}, id="call_a")]),
        Reply(tool_calls=[ToolCallReply("notify_customer", {"name": "ann"}, id="call_b")]),
        Reply("Order 7 has shipped; Ann was told."),
    ]
    with LoopbackJudgeServer(script) as server:
        model = OpenAIChatModel(
            "gpt-4o-mini",
            provider=OpenAIProvider(base_url=server.base_url, api_key="sk-test-not-a-key"),
        )
        settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
        agent = Agent(
            model,
            name="shop",
            instructions="You track orders.",
            capabilities=[Instrumentation(settings)],
        )

        @agent.tool_plain
        def lookup_order(order_id: int) -> dict[str, Any]:
            return {"order": order_id, "status": "shipped"}

        @agent.tool_plain
        def notify_customer(name: str) -> str:
            return f"sent to {name}"

        assert agent.run_sync("Where is order 7?").output == "Order 7 has shipped; Ann was told."
    return otlp_json(exporter.get_finished_spans())


def order_claims_judge(body: dict[str, Any]) -> Reply:
    """A loopback judge for the faithfulness scorer on `order_agent_spans`' agent: its one
    claim is supported only when the agent's tool results reached the judge as the context."""
    prompt = str(body["messages"][-1]["content"])
    if "Extract the factual claims" in prompt:
        return Reply(text=json.dumps({"claims": ["Order 7 has shipped."]}))
    if "Judge each claim against the context" in prompt:
        verdict = "yes" if "shipped" in prompt and "sent" in prompt else "no"
        return Reply(text=json.dumps({"verdicts": [{"verdict": verdict, "reason": "r"}]}))
    return Reply(text="The claim is backed by the tool result.")


def echo_first_question(body: dict[str, Any]) -> Reply:
    """A loopback LLM answering every call with the conversation's first user message quoted:
    each turn's answer says which turn it was."""
    first = next(m for m in body["messages"] if m.get("role") == "user")
    return Reply(text=f"re: {first['content']}")


def converse(
    tracer: Tracer,
    server: LoopbackJudgeServer,
    conversations: Sequence[str],
    turns: int,
    *,
    end_marked: bool = False,
) -> None:
    """The shop agent holding `conversations` at once, interleaved: turn 1 of each, then turn 2
    of each in reverse order, and so on; turn k asks "<conversation> turn k" and calls the tool
    `step_k`. Each turn is a trace of its own, its agent span naming its conversation
    (`gen_ai.conversation.id`); with `end_marked`, the last turn says the conversation ends."""
    for turn in range(1, turns + 1):
        order = conversations if turn % 2 else list(reversed(conversations))
        for conversation in order:
            attributes: dict[str, Any] = {"gen_ai.conversation.id": conversation}
            if end_marked and turn == turns:
                attributes["scorewatch.conversation.end"] = True
            run_agent(
                tracer,
                server,
                f"{conversation} turn {turn}",
                [(f"step_{turn}", {"turn": turn}, lambda a: {"done": a["turn"]})],
                attributes=attributes,
            )


CONVERSATIONS = ("conv-a", "conv-b", "conv-c")


def conversation_spans(turns: int = 3, *, end_marked: bool = False) -> list[ReadableSpan]:
    """The finished spans of the shop agent holding `CONVERSATIONS` interleaved (`converse`)."""
    with (
        LoopbackJudgeServer(echo_first_question) as llm,
        instrumented("genai") as (tracer, exporter),
    ):
        converse(tracer, llm, CONVERSATIONS, turns, end_marked=end_marked)
        return list(exporter.get_finished_spans())


def texts(output: Sequence[Mapping[str, Any]]) -> list[str]:
    """The text of each agent message of a run's output."""
    return [m["content"]["content"] for m in output]
