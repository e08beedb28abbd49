"""Reading a span's messages in each convention producers emit.

* GenAI semantic conventions: the `gen_ai.input.messages`, `gen_ai.output.messages` and
  `gen_ai.system_instructions` JSON attributes (on the span, or on a span event carrying them);
  the older per-message span events (`gen_ai.system.message`, `gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`).
* OpenInference: `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*`, else
  `input.value` / `output.value`.
* OpenLLMetry (Traceloop): `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`, else
  `traceloop.entity.input` / `traceloop.entity.output`.

The first convention that yields anything wins; a span with none yields None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .messages import Message, SpanContent, ToolCall, from_json_text, openai_message, text_of
from .spans import SpanRecord

__all__ = ["REDACTED", "indexed", "read_span", "tool_call_of_span"]


# --------------------------------------------------------------------------------------------
# GenAI semantic conventions


def _semconv_message(raw: Any, default_role: str) -> list[Message]:
    """One message, in parts; each tool result becomes a `tool` message of its own (producers
    send several results in one `user` or `tool` message)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("parts"), list):
        message = openai_message(raw, default_role)
        return [message] if message is not None else []
    role = raw.get("role")
    message = Message(role=role if isinstance(role, str) else default_role)
    results: list[Message] = []
    texts = []
    for part in raw["parts"]:
        if not isinstance(part, Mapping):
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
                    text=response if isinstance(response, str) else _json_text(response),
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            )
    message.text = "\n".join(texts)
    return [*results, message] if texts or message.tool_calls or not results else results


def _json_text(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _semconv_messages(value: Any, default_role: str) -> list[Message] | None:
    decoded = from_json_text(value)
    if isinstance(decoded, Mapping):
        decoded = [decoded]
    if not isinstance(decoded, list):
        return None
    messages = [m for item in decoded for m in _semconv_message(item, default_role)]
    return messages or None


def _system_texts(value: Any) -> list[str]:
    decoded = from_json_text(value)
    if isinstance(decoded, str):
        return [decoded] if decoded.strip() else []
    if isinstance(decoded, Mapping):
        decoded = [decoded]
    if not isinstance(decoded, list):
        return []
    texts = [text_of([part]) if isinstance(part, Mapping) else text_of(part) for part in decoded]
    joined = "\n".join(text for text in texts if text)
    return [joined] if joined.strip() else []


def _semconv_attributes(attributes: Mapping[str, Any]) -> SpanContent | None:
    keys = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
    if not any(key in attributes for key in keys):
        return None
    return SpanContent(
        convention="gen_ai",
        input=_semconv_messages(attributes.get("gen_ai.input.messages"), "user"),
        output=_semconv_messages(attributes.get("gen_ai.output.messages"), "assistant"),
        system=_system_texts(attributes.get("gen_ai.system_instructions")),
    )


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
    if isinstance(body, Mapping):
        return dict(body)
    return {key: from_json_text(value) for key, value in attributes.items()}


def _semconv_events(span: SpanRecord) -> SpanContent | None:
    content = SpanContent(convention="gen_ai_events")
    for event in span.events:
        details = _semconv_attributes(event.attributes)
        if details is not None:  # gen_ai.client.inference.operation.details and the like
            return SpanContent(
                convention="gen_ai",
                input=details.input,
                output=details.output,
                system=details.system,
            )
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


# --------------------------------------------------------------------------------------------
# flattened, indexed attributes (OpenInference, OpenLLMetry)


def indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.N.rest` attributes grouped by N (in N order), keyed by `rest`."""
    groups: dict[int, dict[str, Any]] = {}
    start = len(prefix) + 1
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        number, _, rest = key[start:].partition(".")
        if number.isdigit() and rest:
            groups.setdefault(int(number), {})[rest] = value
    return [groups[number] for number in sorted(groups)]


def _indexed_tool_calls(
    fields: Mapping[str, Any], prefix: str, name: str, arguments: str, call_id: str
) -> list[ToolCall]:
    calls = []
    for item in indexed(fields, prefix):
        tool_name = item.get(name)
        if isinstance(tool_name, str) and tool_name:
            found_id = item.get(call_id)
            calls.append(
                ToolCall(
                    name=tool_name,
                    id=found_id if isinstance(found_id, str) else None,
                    arguments=from_json_text(item.get(arguments)),
                )
            )
    return calls


def _openinference_message(fields: Mapping[str, Any], default_role: str) -> Message:
    role = fields.get("message.role")
    text = fields.get("message.content")
    if text == REDACTED:
        text = ""
    elif not isinstance(text, str):
        text = "\n".join(
            part["message_content.text"]
            for part in indexed(fields, "message.contents")
            if isinstance(part.get("message_content.text"), str)
        )
    call_id = fields.get("message.tool_call_id")
    return Message(
        role=role if isinstance(role, str) else default_role,
        text=text,
        tool_calls=_indexed_tool_calls(
            fields,
            "message.tool_calls",
            "tool_call.function.name",
            "tool_call.function.arguments",
            "tool_call.id",
        ),
        tool_call_id=call_id if isinstance(call_id, str) else None,
    )


# What OpenInference writes in place of content when hiding it (OPENINFERENCE_HIDE_*).
REDACTED = "__REDACTED__"


def _value_messages(value: Any, default_role: str) -> list[Message] | None:
    """Messages from an `input.value` / `output.value` style attribute: plain text, an OpenAI
    request (`messages`) or response (`choices`), a message list, or some other JSON object."""
    decoded = from_json_text(value)
    if decoded is None or decoded == "" or decoded == REDACTED:
        return None
    if isinstance(decoded, str):
        return [Message(role=default_role, text=decoded)]
    if isinstance(decoded, Mapping):
        if isinstance(decoded.get("messages"), list):
            decoded = decoded["messages"]
        elif isinstance(decoded.get("choices"), list) and decoded["choices"]:
            choice = decoded["choices"][0]
            raw = choice.get("message") if isinstance(choice, Mapping) else None
            message = openai_message(raw, "assistant")
            return [message] if message is not None else None
        else:
            for key in (
                "input",
                "query",
                "question",
                "prompt",
                "output",
                "answer",
                "text",
                "content",
                "result",
                "response",
            ):
                found = decoded.get(key)
                if isinstance(found, str) and found.strip():
                    return [Message(role=default_role, text=found)]
            return [Message(role=default_role, text=_json_text(decoded))]
    if isinstance(decoded, list):
        messages = [m for m in (openai_message(item, default_role) for item in decoded) if m]
        return messages or None
    return [Message(role=default_role, text=str(decoded))]


def _split_system(messages: list[Message] | None, content: SpanContent) -> list[Message] | None:
    if messages is None:
        return None
    kept = []
    for message in messages:
        if message.role in ("system", "developer"):
            if message.text.strip():
                content.system.append(message.text)
        else:
            kept.append(message)
    return kept


@dataclass(frozen=True, slots=True)
class _Flattened:
    """A convention that flattens messages into indexed attributes (`<prefix>.<i>.<field>`),
    with the whole input and output values as a fallback: OpenInference and OpenLLMetry."""

    convention: str
    messages: tuple[str, str]  # the input and output prefixes
    values: tuple[str, str]  # the whole input and output values
    read_message: Callable[[Mapping[str, Any], str], Message]

    def __call__(self, span: SpanRecord) -> SpanContent | None:
        attributes = span.attributes
        inputs = indexed(attributes, self.messages[0])
        outputs = indexed(attributes, self.messages[1])
        content = SpanContent(convention=self.convention)
        if inputs or outputs:
            content.input = [self.read_message(item, "user") for item in inputs] or None
            content.output = [self.read_message(item, "assistant") for item in outputs] or None
        elif self.values[0] in attributes or self.values[1] in attributes:
            content.input = _value_messages(attributes.get(self.values[0]), "user")
            content.output = _value_messages(attributes.get(self.values[1]), "assistant")
        else:
            return None
        content.input = _split_system(content.input, content)
        return content if content.has_any else None


def _openllmetry_message(fields: Mapping[str, Any], default_role: str) -> Message:
    role = fields.get("role")
    content = from_json_text(fields.get("content"))
    call_id = fields.get("tool_call_id")
    return Message(
        role=role if isinstance(role, str) else default_role,
        text=text_of(content),
        tool_calls=_indexed_tool_calls(fields, "tool_calls", "name", "arguments", "id"),
        tool_call_id=call_id if isinstance(call_id, str) else None,
    )


_READERS: tuple[Callable[[SpanRecord], SpanContent | None], ...] = (
    lambda span: _semconv_attributes(span.attributes),
    _semconv_events,
    _Flattened(
        "openinference",
        ("llm.input_messages", "llm.output_messages"),
        ("input.value", "output.value"),
        _openinference_message,
    ),
    _Flattened(
        "openllmetry",
        ("gen_ai.prompt", "gen_ai.completion"),
        ("traceloop.entity.input", "traceloop.entity.output"),
        _openllmetry_message,
    ),
)


def read_span(span: SpanRecord) -> SpanContent | None:
    """The span's messages in the first convention that has any; None when none does."""
    for reader in _READERS:
        content = reader(span)
        if content is not None and content.has_any:
            if content.convention == "gen_ai":
                content.input = _split_system(content.input, content)
            return content
    return None


# --------------------------------------------------------------------------------------------
# tool spans


@dataclass(frozen=True, slots=True)
class _ToolSpan:
    """How one convention marks a tool-execution span and names its parts."""

    marker: tuple[str, str]  # the attribute, and its value on a tool span
    name: str
    call_id: str | None
    arguments: str
    result: str
    name_prefix: str = ""  # stripped from the span name when it stands in for the tool's name


_TOOL_SPANS: Final = (
    _ToolSpan(
        ("gen_ai.operation.name", "execute_tool"),
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        name_prefix="execute_tool",
    ),
    _ToolSpan(
        ("openinference.span.kind", "TOOL"),
        "tool.name",
        "tool_call.id",
        "input.value",
        "output.value",
    ),
    _ToolSpan(
        ("traceloop.span.kind", "tool"),
        "traceloop.entity.name",
        None,
        "traceloop.entity.input",
        "traceloop.entity.output",
    ),
)


def tool_call_of_span(span: SpanRecord) -> ToolCall | None:
    """The tool call a tool-execution span records, in any convention; None for other spans.

    The span's name and id stand in for a missing tool name and call id; a result attribute
    that is present (even empty) counts as the tool's result."""
    attributes = span.attributes
    for kind in _TOOL_SPANS:
        if attributes.get(kind.marker[0]) != kind.marker[1]:
            continue
        name = attributes.get(kind.name)
        if not isinstance(name, str) or not name:
            stripped = span.name.removeprefix(kind.name_prefix).strip() if kind.name_prefix else ""
            name = stripped or span.name
        call_id = attributes.get(kind.call_id) if kind.call_id else None
        call = ToolCall(
            name=name,
            id=call_id if isinstance(call_id, str) and call_id else span.span_id,
            arguments=from_json_text(attributes.get(kind.arguments)),
        )
        if kind.result in attributes:
            call.result = from_json_text(attributes[kind.result])
            call.has_result = True
        return call
    return None
