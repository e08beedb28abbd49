"""The OpenTelemetry GenAI semantic conventions.

Messages: the `gen_ai.input.messages`, `gen_ai.output.messages` and `gen_ai.system_instructions`
JSON attributes (on the span, or on a span event carrying them), else the older per-message span
events (`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
`gen_ai.tool.message`, `gen_ai.choice`). Agents are `invoke_agent` operations, tools run in
`execute_tool` operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..messages import (
    JSON_OBJECT,
    Message,
    SpanContent,
    ToolCall,
    from_json_text,
    json_text,
    openai_message,
    text_of,
)
from ..select import SpanSelector
from ..spans import SpanRecord
from ._record import Convention, Marker, PartialReading, ToolSpans

__all__ = ["GEN_AI"]

_OPERATION = "gen_ai.operation.name"


def _message(raw: Any, default_role: str) -> list[Message]:
    """One message, in parts; each tool result becomes a `tool` message of its own (producers
    send several results in one `user` or `tool` message)."""
    if not isinstance(raw, JSON_OBJECT) or not isinstance(raw.get("parts"), list):
        message = openai_message(raw, default_role)
        return [message] if message is not None else []
    role = raw.get("role")
    message = Message(role=role if isinstance(role, str) else default_role)
    results: list[Message] = []
    texts = []
    for part in raw["parts"]:
        if not isinstance(part, JSON_OBJECT):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call" and isinstance(part.get("name"), str):
            call_id = part.get("id")
            message.tool_calls.append(
                ToolCall(
                    name=part["name"],
                    id=call_id if isinstance(call_id, str) else None,
                    arguments=from_json_text(part.get("arguments")),
                )
            )
        elif kind == "tool_call_response":
            call_id = part.get("id")
            response = part.get("response", part.get("result"))
            results.append(
                Message(
                    role="tool",
                    text=response if isinstance(response, str) else json_text(response),
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            )
    message.text = "\n".join(texts)
    return [*results, message] if texts or message.tool_calls or not results else results


def _messages(value: Any, default_role: str) -> list[Message] | None:
    decoded = from_json_text(value)
    # A list first: decoded message lists are lists, and only other values pay for the
    # `Mapping` ABC check of `JSON_OBJECT` (no value is both).
    if not isinstance(decoded, list):
        if not isinstance(decoded, JSON_OBJECT):
            return None
        decoded = [decoded]
    messages = [m for item in decoded for m in _message(item, default_role)]
    return messages or None


def _system_texts(value: Any) -> list[str]:
    if value is None:  # most spans have no system instructions: no type checks for them
        return []
    decoded = from_json_text(value)
    if isinstance(decoded, str):
        return [decoded] if decoded.strip() else []
    if isinstance(decoded, JSON_OBJECT):
        decoded = [decoded]
    if not isinstance(decoded, list):
        return []
    texts = [
        text_of([part]) if isinstance(part, JSON_OBJECT) else text_of(part) for part in decoded
    ]
    joined = "\n".join(text for text in texts if text)
    return [joined] if joined.strip() else []


def _from_attributes(attributes: Mapping[str, Any]) -> SpanContent | None:
    if (
        "gen_ai.input.messages" not in attributes
        and "gen_ai.output.messages" not in attributes
        and "gen_ai.system_instructions" not in attributes
    ):
        return None
    output = _messages(attributes.get("gen_ai.output.messages"), "assistant")
    return _with_output(attributes, output)


def _with_output(attributes: Mapping[str, Any], output: list[Message] | None) -> SpanContent:
    return SpanContent(
        convention="gen_ai",
        input=_messages(attributes.get("gen_ai.input.messages"), "user"),
        output=output,
        system=_system_texts(attributes.get("gen_ai.system_instructions")),
    )


def _output_first(span: SpanRecord) -> list[Message] | None:
    """The output messages of the span's `gen_ai.output.messages` attribute, if it has any.
    Then `_read` reads the span from its attributes (its content has an output), and
    `_read_with_output` gives what `_read` gives, reading only the rest."""
    value = span.attributes.get("gen_ai.output.messages")
    return None if value is None else _messages(value, "assistant")


def _read_with_output(span: SpanRecord, output: list[Message]) -> SpanContent:
    content = _with_output(span.attributes, output)
    content.take_system_messages()
    return content


def _input_first(span: SpanRecord) -> SpanContent | None:
    """The span's input and system, its output unread (None), when its
    `gen_ai.input.messages` attribute gives an input or a system prompt. Then `_read` reads
    the span from its attributes (its content has an input or a system before the system
    messages move, and keeps one after), and gives this content with `_output_first`'s output
    (None when the span has no output messages)."""
    attributes = span.attributes
    value = attributes.get("gen_ai.input.messages")
    if value is None:
        return None
    content = SpanContent(
        convention="gen_ai",
        input=_messages(value, "user"),
        system=_system_texts(attributes.get("gen_ai.system_instructions")),
    )
    content.take_system_messages()
    return content if content.input or content.system else None


_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _event_body(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """An event's body: the `gen_ai.event.content` JSON some producers attach, else its
    attributes (with JSON-encoded values decoded)."""
    body = from_json_text(attributes.get("gen_ai.event.content"))
    if isinstance(body, JSON_OBJECT):
        return dict(body)
    return {key: from_json_text(value) for key, value in attributes.items()}


def _from_events(span: SpanRecord) -> SpanContent | None:
    if not span.events:
        return None
    content = SpanContent(convention="gen_ai_events")
    for event in span.events:
        details = _from_attributes(event.attributes)
        if details is not None:  # gen_ai.client.inference.operation.details and the like
            return details
        role = _EVENT_ROLES.get(event.name)
        body = _event_body(event.attributes)
        if role is not None:
            message = openai_message({**body, "role": body.get("role", role)}, role)
            if message is None:
                continue
            if role == "tool" and message.tool_call_id is None and isinstance(body.get("id"), str):
                message.tool_call_id = body["id"]
            if message.role == "system":
                if message.text.strip():
                    content.system.append(message.text)
            else:
                content.input = [*(content.input or []), message]
        elif event.name == "gen_ai.choice":
            message = openai_message(body.get("message", body), "assistant")
            if message is not None:
                message.role = "assistant"
                content.output = [*(content.output or []), message]
    return content if content.has_any else None


def _read(span: SpanRecord) -> SpanContent | None:
    """The message attributes of the span, else its events; system-role messages of the
    attributes' input count as the system prompt."""
    content = _from_attributes(span.attributes)
    if content is None or not content.has_any:
        content = _from_events(span)
    if content is None or not content.has_any:
        return None
    if content.convention == "gen_ai":
        content.take_system_messages()
    return content


GEN_AI = Convention(
    name="gen_ai",
    read=_read,
    partial=PartialReading("gen_ai", _output_first, _read_with_output, _input_first),
    agent=Marker(_OPERATION, ("invoke_agent",)),
    agent_name=("gen_ai.agent.name",),
    tool_spans=ToolSpans(
        Marker(_OPERATION, ("execute_tool",)),
        name="gen_ai.tool.name",
        call_id="gen_ai.tool.call.id",
        arguments="gen_ai.tool.call.arguments",
        result="gen_ai.tool.call.result",
        name_prefix="execute_tool",
    ),
    selects=(
        SpanSelector(operation=["invoke_agent", "chat", "text_completion", "generate_content"]),
    ),
)
