"""OpenInference (Arize Phoenix).

Messages: `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*`, else
`input.value` / `output.value`. Span kinds (`openinference.span.kind`) mark agents (`AGENT`),
model calls (`LLM`), tools (`TOOL`) and retrievers (`RETRIEVER`, whose documents are the run's
context).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..select import SpanSelector
from ._flattened import REDACTED, FlattenedMessages, ToolCallFields
from ._record import Convention, Documents, Marker, ToolSpans, indexed

__all__ = ["OPENINFERENCE"]

_KIND = "openinference.span.kind"


def _text(fields: Mapping[str, Any]) -> str:
    """`message.content`, else the text parts of `message.contents`; redacted content is none."""
    text = fields.get("message.content")
    if text == REDACTED:
        return ""
    if isinstance(text, str):
        return text
    return "\n".join(
        part["message_content.text"]
        for part in indexed(fields, "message.contents")
        if isinstance(part.get("message_content.text"), str)
    )


OPENINFERENCE = Convention(
    name="openinference",
    read=FlattenedMessages(
        "openinference",
        messages=("llm.input_messages", "llm.output_messages"),
        values=("input.value", "output.value"),
        role="message.role",
        text=_text,
        tool_calls=ToolCallFields(
            "message.tool_calls",
            name="tool_call.function.name",
            arguments="tool_call.function.arguments",
            id="tool_call.id",
        ),
        tool_call_id="message.tool_call_id",
    ),
    agent=Marker(_KIND, ("AGENT",)),
    agent_name=("agent.name",),
    tool_spans=ToolSpans(
        Marker(_KIND, ("TOOL",)),
        name="tool.name",
        call_id="tool_call.id",
        arguments="input.value",
        result="output.value",
    ),
    selects=(
        SpanSelector(attributes={_KIND: "AGENT"}),
        SpanSelector(attributes={_KIND: "LLM"}),
    ),
    documents=Documents(
        Marker(_KIND, ("RETRIEVER",)), prefix="retrieval.documents", text="document.content"
    ),
)
