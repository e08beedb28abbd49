"""One message shape for every convention: what a span said went in and came out.

Each convention module turns its attributes or events into `Message`s; `run.py` turns those into
the agent messages the scorers read. Nothing here knows a convention.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "JSON_OBJECT",
    "Message",
    "SpanContent",
    "ToolCall",
    "from_json_text",
    "json_text",
    "openai_message",
    "text_of",
]


JSON_OBJECT: Final = (dict, Mapping)
"""What `isinstance` asks of a value that may be a JSON object. Decoded JSON objects are dicts:
the exact type is checked first, and only other values pay for `Mapping`'s ABC check (about a
third of a microsecond each, a dozen times per span read)."""


@dataclass(slots=True)
class ToolCall:
    """A tool the model asked for, and its result once one was seen."""

    name: str
    id: str | None = None
    arguments: Any = None
    result: Any = None
    has_result: bool = False


@dataclass(slots=True)
class Message:
    role: str
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None

    @property
    def empty(self) -> bool:
        return not self.text.strip() and not self.tool_calls


@dataclass(slots=True)
class SpanContent:
    """What one span carries; None means the span says nothing about that side."""

    convention: str
    input: list[Message] | None = None
    output: list[Message] | None = None
    system: list[str] = field(default_factory=list)

    @property
    def has_any(self) -> bool:
        return bool(self.input or self.output or self.system)

    def take_system_messages(self) -> None:
        """Move the system and developer messages of the input to `system`, as its texts."""
        if self.input is None:
            return
        kept = []
        for message in self.input:
            if message.role in ("system", "developer"):
                if message.text.strip():
                    self.system.append(message.text)
            else:
                kept.append(message)
        self.input = kept


# `json.loads` of text without options, less what it does around the scan: checks of the
# argument's type and of a byte-order mark, and two regular expressions skipping whitespace
# (text starting with `{`, `[` or `"` has none before; after the value, only JSON's four
# whitespace characters may follow). Ten calls per run read.
# (`scan_once` is set by `JSONDecoder.__init__`; typeshed leaves it out.)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_JSON_WHITESPACE = " \t\n\r"


def from_json_text(value: Any) -> Any:
    """A JSON-encoded attribute decoded; an array attribute (a tuple, `spans.attributes_of`)
    as a list, as JSON decodes one; anything else (or text that is not JSON) as it is."""
    if type(value) is tuple:
        return list(value)
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            decoded, end = _scan(value, 0)
        except (StopIteration, ValueError, RecursionError):  # hostile nesting is just text
            return value
        if end != len(value) and value[end:].strip(_JSON_WHITESPACE):
            return value  # more than one value
        return decoded
    return value


def json_text(value: Any) -> str:
    """A value as JSON text; `str` of it when it is not JSON-serialisable."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def text_of(content: Any, _depth: int = 0) -> str:
    """The text of a message content: a string, or its text parts joined by newlines."""
    if content is None or _depth > 8:  # real contents nest two or three levels
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, JSON_OBJECT) and part.get("type") in (
                None,
                "text",
                "input_text",
                "output_text",
            ):
                text = part.get("text", part.get("content"))
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts)
    if isinstance(content, JSON_OBJECT):
        return text_of(content.get("text", content.get("content")), _depth + 1)
    return str(content)


def _openai_tool_calls(raw: Any) -> list[ToolCall]:
    calls = []
    decoded = from_json_text(raw)
    for item in decoded if isinstance(decoded, list) else []:
        if not isinstance(item, JSON_OBJECT):
            continue
        function = item.get("function")
        function = function if isinstance(function, JSON_OBJECT) else item
        name = function.get("name")
        if isinstance(name, str) and name:
            call_id = item.get("id")
            calls.append(
                ToolCall(
                    name=name,
                    id=call_id if isinstance(call_id, str) else None,
                    arguments=from_json_text(function.get("arguments")),
                )
            )
    return calls


def openai_message(raw: Any, default_role: str = "user") -> Message | None:
    """A chat-completions style message (`role`, `content`, `tool_calls`, `tool_call_id`)."""
    if isinstance(raw, str):
        return Message(role=default_role, text=raw)
    if not isinstance(raw, JSON_OBJECT):
        return None
    role = raw.get("role")
    call_id = raw.get("tool_call_id")
    return Message(
        role=role if isinstance(role, str) else default_role,
        text=text_of(raw.get("content")),
        tool_calls=_openai_tool_calls(raw.get("tool_calls")),
        tool_call_id=call_id if isinstance(call_id, str) else None,
    )
