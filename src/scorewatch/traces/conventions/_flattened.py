"""Reading conventions that flatten messages into indexed attributes (`<prefix>.<i>.<field>`),
with the whole input and output values as a fallback: OpenInference and OpenLLMetry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import Message, SpanContent, ToolCall, from_json_text, json_text, openai_message
from ..spans import SpanRecord
from ._record import indexed

__all__ = ["REDACTED", "FlattenedMessages", "ToolCallFields"]

# What OpenInference writes in place of content when hiding it (OPENINFERENCE_HIDE_*).
REDACTED = "__REDACTED__"

# The keys whose text stands for a whole JSON object value, first first.
_TEXT_KEYS = (
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
)


@dataclass(frozen=True, slots=True)
class ToolCallFields:
    """A message's tool calls flattened as `<prefix>.<k>.<field>` attributes."""

    prefix: str
    name: str
    arguments: str
    id: str

    def of(self, fields: Mapping[str, Any]) -> list[ToolCall]:
        calls = []
        for item in indexed(fields, self.prefix):
            tool_name = item.get(self.name)
            if isinstance(tool_name, str) and tool_name:
                found_id = item.get(self.id)
                calls.append(
                    ToolCall(
                        name=tool_name,
                        id=found_id if isinstance(found_id, str) else None,
                        arguments=from_json_text(item.get(self.arguments)),
                    )
                )
        return calls


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
            for key in _TEXT_KEYS:
                found = decoded.get(key)
                if isinstance(found, str) and found.strip():
                    return [Message(role=default_role, text=found)]
            return [Message(role=default_role, text=json_text(decoded))]
    if isinstance(decoded, list):
        messages = [m for m in (openai_message(item, default_role) for item in decoded) if m]
        return messages or None
    return [Message(role=default_role, text=str(decoded))]


@dataclass(frozen=True, slots=True)
class FlattenedMessages:
    """A span's messages as indexed attributes (`<messages>.<i>.<field>`, the fields of one
    message named relative to it), else its whole input and output values."""

    convention: str
    messages: tuple[str, str]  # the input and output prefixes
    values: tuple[str, str]  # the whole input and output values
    role: str
    text: Callable[[Mapping[str, Any]], str]  # a message's text from its fields
    tool_calls: ToolCallFields
    tool_call_id: str  # on a tool message: the call it answers
    # `messages` with their dots, joined once: every span with no content is asked for them.
    prefixes: tuple[str, str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefixes", (self.messages[0] + ".", self.messages[1] + "."))

    def __call__(self, span: SpanRecord) -> SpanContent | None:
        attributes = span.attributes
        inputs: list[dict[str, Any]] = []
        outputs: list[dict[str, Any]] = []
        prefixes = self.prefixes
        for key in attributes:  # grouped only when a key may be a message's: most spans have none
            if key.startswith(prefixes):
                inputs = indexed(attributes, self.messages[0])
                outputs = indexed(attributes, self.messages[1])
                break
        if inputs or outputs:
            content = SpanContent(convention=self.convention)
            content.input = [self._message(item, "user") for item in inputs] or None
            content.output = [self._message(item, "assistant") for item in outputs] or None
        elif self.values[0] in attributes or self.values[1] in attributes:
            content = SpanContent(convention=self.convention)
            content.input = _value_messages(attributes.get(self.values[0]), "user")
            content.output = _value_messages(attributes.get(self.values[1]), "assistant")
        else:
            return None
        content.take_system_messages()
        return content if content.has_any else None

    def _message(self, fields: Mapping[str, Any], default_role: str) -> Message:
        role = fields.get(self.role)
        call_id = fields.get(self.tool_call_id)
        return Message(
            role=role if isinstance(role, str) else default_role,
            text=self.text(fields),
            tool_calls=self.tool_calls.of(fields),
            tool_call_id=call_id if isinstance(call_id, str) else None,
        )
