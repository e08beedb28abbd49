"""docs/traces.md quick start: an agent that knows nothing of scorewatch.

The `openai` client, instrumented by OpenTelemetry's GenAI instrumentation, inside an
`invoke_agent` span; the SDK's OTLP/HTTP exporter sends the spans where
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT says, with OTEL_EXPORTER_OTLP_TRACES_HEADERS.
"""

import os

# The instrumentation records message content on spans only when asked to.
os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

import openai
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
OpenAIInstrumentor().instrument()

tracer = trace.get_tracer("support-agent")
client = openai.OpenAI()
question = "My order 7 has not arrived. Where is it?"
with tracer.start_as_current_span(
    "invoke_agent support",
    attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"},
) as agent:
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are a courteous support agent."},
            {"role": "user", "content": question},
        ],
    )
    print(reply.choices[0].message.content)
    context = agent.get_span_context()
    print(f"trace {context.trace_id:032x} span {context.span_id:016x}")

provider.shutdown()  # export what is left before exiting
