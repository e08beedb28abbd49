"""Helpers for scorers: pull text, tool calls and reasoning out of run inputs and outputs.

Two message shapes are understood side by side:

* the reference system's agent messages (`{"id", "role", "content": {"format": 2, "parts": [...],
  "content": str, "toolInvocations": [...]}, "createdAt"}`), whose runs carry an input of the form
  `{"inputMessages", "rememberedMessages", "systemMessages", "taggedSystemMessages"}`;
* plain OpenAI-style chat messages (`{"role", "content"}` where content is a string, a list of
  `{"type": "text", "text": ...}` parts, or None; assistant `tool_calls`; `role: "tool"` results),
  which is what most live Python traffic looks like.

Pydantic models (an SDK's message objects) are read through their `model_dump()`.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeGuard

__all__ = [
    "ToolCallInfo",
    "ToolCalls",
    "ToolName",
    "ToolResultInfo",
    "extract_agent_response_messages",
    "extract_input_messages",
    "extract_tool_calls",
    "extract_tool_results",
    "format_number",
    "get_assistant_message_from_run_output",
    "get_combined_system_prompt",
    "get_conversation_history_from_run_input",
    "get_reasoning_from_run_output",
    "get_system_messages_from_run_input",
    "get_text_content_from_message",
    "get_user_message_from_run_input",
    "is_closer_to",
    "is_scorer_run_input_for_agent",
    "is_scorer_run_output_for_agent",
    "is_tool_name",
    "js_json",
    "round_to_two_decimals",
    "shown_name",
]

# "input_text"/"output_text" are the OpenAI Responses API spellings of a text part.
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


# --------------------------------------------------------------------------------------------
# numbers


def round_to_two_decimals(value: float) -> float:
    """Round half up to two decimals, as the reference system does (`1.005 -> 1.01`).

    Python's `round` rounds half to even, which would give different scores on ties.
    """
    return math.floor((value + sys.float_info.epsilon) * 100 + 0.5) / 100


def is_closer_to(value: float, first: float, second: float) -> bool:
    """True when `value` is strictly closer to `first` than to `second`."""
    return abs(value - first) < abs(value - second)


def format_number(value: float) -> str:
    """Print a number the way JavaScript's `String(n)` does: `1`, `0.5`, `0.67`, `1e-7`.

    Prompts quote scores; a judge told "Score: 1.0" next to "Alignment score: 1" is a needless
    inconsistency, and the prompts must match the reference system's text.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr() yields the shortest digit string that round-trips, as JavaScript does.
    parsed = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in parsed.digits)
    exponent = int(parsed.exponent)
    count = len(digits)
    point = exponent + count  # position of the decimal point relative to the digits
    if count <= point <= 21:
        text = digits + "0" * (point - count)
    elif 0 < point <= 21:
        text = f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = "0." + "0" * (-point) + digits
    else:
        power = point - 1
        mantissa = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + text


# Beyond this nesting a value is written as its `str()`: hostile input must not exhaust the stack.
_JSON_MAX_DEPTH = 200


def _js_json(value: Any, depth: int) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return "null"  # JSON.stringify writes NaN and Infinity as null
        if isinstance(value, int) and abs(value) >= 10**21:
            return format_number(float(value))
        return format_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if depth < _JSON_MAX_DEPTH:
        if isinstance(value, Mapping):
            members = (
                f"{_js_json(str(k), depth)}:{_js_json(v, depth + 1)}" for k, v in value.items()
            )
            return "{" + ",".join(members) + "}"
        if isinstance(value, list | tuple):
            return "[" + ",".join(_js_json(item, depth + 1) for item in value) + "]"
        record = _as_mapping(value)
        if record is not None:
            return _js_json(record, depth + 1)
    return json.dumps(str(value), ensure_ascii=False)


def js_json(value: Any) -> str:
    """Compact JSON as JavaScript's `JSON.stringify` writes it: members in their order, numbers as
    JavaScript prints them (`2` for `2.0`, `1e-7`, `1e+21`), NaN and Infinity as `null`, any
    other object as its text (a pydantic model as its `model_dump()`)."""
    return _js_json(value, 0)


# --------------------------------------------------------------------------------------------
# shape checks


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    # A dict first: what runs are made of, and `Mapping`'s ABC check costs several times this.
    if type(value) is dict or isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        dumped = dump()
        if isinstance(dumped, Mapping):
            return dumped
    return None


def _as_list(value: Any) -> list[Any] | None:
    if isinstance(value, list | tuple):
        return list(value)
    return None


def is_scorer_run_input_for_agent(value: Any) -> bool:
    """True for the reference system's agent run input (all four message collections present)."""
    record = _as_mapping(value)
    return (
        record is not None
        and _as_list(record.get("inputMessages")) is not None
        and _as_list(record.get("rememberedMessages")) is not None
        and _as_list(record.get("systemMessages")) is not None
        and _as_mapping(record.get("taggedSystemMessages")) is not None
    )


def _is_agent_message(value: Any) -> bool:
    record = _as_mapping(value)
    return (
        record is not None
        and isinstance(record.get("id"), str)
        and isinstance(record.get("role"), str)
        and "content" in record
        and "createdAt" in record
    )


def is_scorer_run_output_for_agent(value: Any) -> bool:
    """True for a list of the reference system's agent messages (an empty list qualifies)."""
    items = _as_list(value)
    return items is not None and all(_is_agent_message(item) for item in items)


# --------------------------------------------------------------------------------------------
# text


def _last_text_part(parts: Iterable[Any]) -> str | None:
    found: str | None = None
    for part in parts:
        record = _as_mapping(part)
        if record is None:
            continue
        text = record.get("text")
        if record.get("type") in _TEXT_PART_TYPES and isinstance(text, str):
            found = text
    return found


def get_text_content_from_message(message: Any) -> str:
    """The text of one message, or `''` when it has none.

    A list of parts yields its LAST text part (the reference system's choice: earlier text parts
    are usually preamble before a tool call). None content (an OpenAI tool-call turn) is `''`.
    """
    record = _as_mapping(message)
    if record is None:
        return message if isinstance(message, str) else ""
    content = record.get("content")
    if isinstance(content, str):
        return content
    parts = _as_list(content)
    if parts is not None:
        return _last_text_part(parts) or ""
    body = _as_mapping(content)
    if body is None:
        return ""
    inner = body.get("content")
    if isinstance(inner, str) and inner:
        return inner
    text = body.get("text")
    if isinstance(text, str) and text:
        return text
    body_parts = _as_list(body.get("parts"))
    if body_parts is not None:
        return _last_text_part(body_parts) or ""
    return ""


def _text_from_value(value: Any) -> str | None:
    """Best-effort text of a message, a content value or a part list; None when there is none."""
    if isinstance(value, str):
        return value or None
    items = _as_list(value)
    if items is not None:
        return _last_text_part(items) or None
    record = _as_mapping(value)
    if record is None:
        return None
    found = _text_from_value(record.get("content"))
    if found is not None:
        return found
    for key in ("text", "body"):
        candidate = record.get(key)
        if isinstance(candidate, str) and candidate:
            return candidate
    parts = _as_list(record.get("parts"))
    if parts is not None:
        return _last_text_part(parts) or None
    return None


def _role_of(message: Any) -> str | None:
    record = _as_mapping(message)
    role = record.get("role") if record is not None else None
    return role if isinstance(role, str) else None


def _first_text_with_role(messages: Any, role: str) -> str | None:
    """Text of the FIRST message with `role` (later messages of that role are not consulted)."""
    items = _as_list(messages)
    if items is None:
        return None
    for message in items:
        if _role_of(message) == role:
            return _text_from_value(message)
    return None


def _text_or_record(value: Any, role: str) -> str | Mapping[str, Any] | None:
    """A bare string is the text itself; a message list (as chat-completion callers pass it)
    gives the text of its first `role` message; anything else is read as a record (None when
    it is not one)."""
    if isinstance(value, str):
        return value
    items = _as_list(value)
    if items is not None:
        return _first_text_with_role(items, role)
    return _as_mapping(value)


def get_user_message_from_run_input(run_input: Any) -> str | None:
    """The user's message: a bare string, the first user message of `inputMessages` or
    `messages`, or a `prompt` / `text` / `content` / `input` / `user` field. None when absent."""
    record = _text_or_record(run_input, "user")
    if not isinstance(record, Mapping):
        return record
    for key in ("inputMessages", "messages"):
        found = _first_text_with_role(record.get(key), "user")
        if found is not None:
            return found
    for key in ("prompt", "text"):
        candidate = record.get(key)
        if isinstance(candidate, str):
            return candidate
    for key in ("content", "input", "user"):
        found = _text_from_value(record.get(key))
        if found is not None:
            return found
    return None


def get_assistant_message_from_run_output(run_output: Any) -> str | None:
    """The assistant's answer: a bare string, the FIRST assistant message of a list, a single
    assistant message or `{text}` / `{content}` object, or an OpenAI chat-completion response's
    first choice. None when absent."""
    record = _text_or_record(run_output, "assistant")
    if not isinstance(record, Mapping):
        return record
    role = record.get("role")
    choices = _as_list(record.get("choices"))
    if role is None and choices:
        first = _as_mapping(choices[0])
        if first is not None and first.get("message") is not None:
            return get_assistant_message_from_run_output(first.get("message"))
    if role is not None and role != "assistant":
        return None
    text = record.get("text")
    if isinstance(text, str):
        return text
    content = record.get("content")
    if isinstance(content, str):
        return content
    if _as_mapping(content) is not None or _as_list(content) is not None:
        return (
            get_text_content_from_message(record) or get_text_content_from_message(content) or None
        )
    if role == "assistant":
        return get_text_content_from_message(record) or None
    return None


def get_system_messages_from_run_input(run_input: Any) -> list[str]:
    """Every system prompt of the input: `systemMessages`, system-role messages of
    `inputMessages` / `messages` (or of a bare message list), then `taggedSystemMessages`."""
    found: list[str] = []
    items = _as_list(run_input)
    record = {"messages": items} if items is not None else _as_mapping(run_input)
    if record is None:
        return found
    for message in _as_list(record.get("systemMessages")) or []:
        if isinstance(message, str):
            text = message
        else:
            entry = _as_mapping(message)
            content = entry.get("content") if entry is not None else None
            parts = _as_list(content)
            if isinstance(content, str):
                text = content
            elif parts is not None:
                text = " ".join(
                    str(part.get("text") or "")
                    for part in (_as_mapping(p) for p in parts)
                    if part is not None and part.get("type") in _TEXT_PART_TYPES
                )
            else:
                text = ""
        if text:
            found.append(text)
    for key in ("inputMessages", "messages"):
        for message in _as_list(record.get(key)) or []:
            if _role_of(message) == "system":
                text_or_none = _text_from_value(message)
                if text_or_none:
                    found.append(text_or_none)
    tagged = _as_mapping(record.get("taggedSystemMessages"))
    for group in (tagged or {}).values():
        for message in _as_list(group) or []:
            text_or_none = _text_from_value(message)
            if text_or_none:
                found.append(text_or_none)
    return found


def get_combined_system_prompt(run_input: Any) -> str:
    """All system prompts of the input joined by a blank line."""
    return "\n\n".join(get_system_messages_from_run_input(run_input))


def get_conversation_history_from_run_input(run_input: Any, max_messages: int = 10) -> str | None:
    """The remembered messages of an agent run input (the last `max_messages`) as `role: text`
    lines, or None when there are none or the input is not an agent run input."""
    if not is_scorer_run_input_for_agent(run_input) or max_messages <= 0:
        return None
    remembered = _as_list(run_input["rememberedMessages"]) or []
    lines = []
    for message in remembered[-max_messages:]:
        role, text = _role_of(message), get_text_content_from_message(message).strip()
        if role and text:
            lines.append(f"{role}: {text}")
    return "\n".join(lines) or None


def _messages_of(run_output: Any) -> list[Any]:
    """The message list of an output: the list itself, or a single message wrapped."""
    items = _as_list(run_output)
    if items is not None:
        return items
    record = _as_mapping(run_output)
    if record is not None and isinstance(record.get("role"), str):
        return [record]
    return []


def extract_input_messages(run_input: Any) -> list[str]:
    """Text of every input message: all of `inputMessages`, else the user messages of an OpenAI
    `messages` list (or of a bare list); a bare string is one message."""
    if isinstance(run_input, str):
        return [run_input]
    items = _as_list(run_input)
    record = _as_mapping(run_input)
    if items is None and record is not None:
        agent_messages = _as_list(record.get("inputMessages"))
        if agent_messages is not None:
            return [get_text_content_from_message(message) for message in agent_messages]
        items = _as_list(record.get("messages"))
    return [
        get_text_content_from_message(message)
        for message in items or []
        if _role_of(message) == "user"
    ]


def extract_agent_response_messages(run_output: Any) -> list[str]:
    """Text of every assistant message, in order (`''` for a turn without text)."""
    if isinstance(run_output, str):
        return [run_output]
    return [
        get_text_content_from_message(message)
        for message in _messages_of(run_output)
        if _role_of(message) == "assistant"
    ]


def _reasoning_from_parts(parts: Iterable[Any]) -> str | None:
    texts: list[str] = []
    for part in parts:
        record = _as_mapping(part)
        if record is None or record.get("type") != "reasoning":
            continue
        details = _as_list(record.get("details"))
        if details is not None:
            text = "".join(
                str(detail.get("text") or "")
                for detail in (_as_mapping(d) for d in details)
                if detail is not None and detail.get("type") == "text"
            )
        else:
            reasoning = record.get("reasoning") or record.get("text")
            text = reasoning if isinstance(reasoning, str) else ""
        if text:
            texts.append(text)
    return "\n".join(texts) if texts else None


def get_reasoning_from_run_output(run_output: Any) -> str | None:
    """The reasoning text of the first assistant message, or None.

    Read from `content.reasoning`, then from `reasoning` parts (their `details[].text`, else their
    `reasoning`); for OpenAI-style messages from `reasoning_content` / `reasoning` fields.
    """
    message = next(
        (m for m in _messages_of(run_output) if _role_of(m) == "assistant"),
        None,
    )
    record = _as_mapping(message)
    if record is None:
        return None
    content = record.get("content")
    body = _as_mapping(content)
    if body is not None:
        reasoning = body.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            return reasoning
        parts = _as_list(body.get("parts"))
        if parts:
            return _reasoning_from_parts(parts)
        return None
    for key in ("reasoning_content", "reasoning"):
        reasoning = record.get(key)
        if isinstance(reasoning, str) and reasoning:
            return reasoning
    parts = _as_list(content)
    return _reasoning_from_parts(parts) if parts else None


# --------------------------------------------------------------------------------------------
# tools


ToolName = str | int | float
"""A tool's name as an output names it: a string, or a number kept as the number (as the
reference keeps it; a prompt shows it as JavaScript prints it)."""


def shown_name(value: Any) -> str:
    """A name as a JavaScript template shows it: a number as JavaScript prints it (`7`)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    return str(value)


def is_tool_name(value: Any) -> TypeGuard[ToolName]:
    """A name the reference counts: a non-empty string or a number other than 0 and NaN."""
    if isinstance(value, str):
        return bool(value)
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value != 0


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """One tool call found in an output; `tool_call_id` falls back to `"<message>-<call>"`."""

    tool_name: ToolName
    tool_call_id: str
    message_index: int
    invocation_index: int


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """The tools called, in order (`tools` repeats a name called twice)."""

    tools: list[ToolName] = field(default_factory=list)
    tool_call_infos: list[ToolCallInfo] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolResultInfo:
    """One completed tool call: its name, id (`''` when unknown), arguments and result."""

    tool_name: str
    tool_call_id: str
    args: dict[str, Any]
    result: Any


def _call_id(item: Any) -> str | None:
    record = item if type(item) is dict else _as_mapping(item)
    call_id = record.get("toolCallId") if record is not None else None
    return call_id if isinstance(call_id, str) and call_id else None


def _merged_invocations(legacy: list[Any], from_parts: list[Mapping[str, Any]]) -> list[Any]:
    """Parts in order, with legacy-only calls kept before the next call both forms share (the
    reference's merge; parts win for an id found in both: they hold the final state)."""
    part_ids = {call_id for call_id in map(_call_id, from_parts) if call_id}
    legacy_ids = list(map(_call_id, legacy))
    if part_ids.issuperset(legacy_ids):
        # Every legacy call is one the parts hold too (an agent message as the reference
        # writes it, a trace's run: the same calls both ways), so none is kept beside them
        # below, in whatever order: the merge is the parts as they are.
        return list(from_parts)
    # A later duplicate id wins, as in the reference's Map.
    positions = {call_id: index for index, call_id in enumerate(legacy_ids) if call_id}

    def legacy_only(item: Any) -> bool:
        return _as_mapping(item) is not None and _call_id(item) not in part_ids

    merged: list[Any] = []
    next_legacy = 0
    for invocation in from_parts:
        call_id = _call_id(invocation)
        shared = positions.get(call_id) if call_id else None
        if shared is not None and shared >= next_legacy:
            merged.extend(item for item in legacy[next_legacy:shared] if legacy_only(item))
            next_legacy = shared + 1
        merged.append(invocation)
    merged.extend(item for item in legacy[next_legacy:] if legacy_only(item))
    return merged


def _agent_invocations(message: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The reference system's tool invocations of a message, or None when it has none.

    A message may hold its calls as `tool-invocation` parts, in the legacy
    `content.toolInvocations` array, or both (a call that threw may be only in the parts);
    both are read and merged as the reference merges them.
    """
    body = _as_mapping(message.get("content"))
    if body is None:
        return None
    legacy = _as_list(body.get("toolInvocations")) or []
    from_parts = [
        invocation
        for part in (_as_mapping(p) for p in _as_list(body.get("parts")) or [])
        if part is not None and part.get("type") == "tool-invocation"
        for invocation in [_as_mapping(part.get("toolInvocation"))]
        if invocation
    ]
    invocations = [m for m in map(_as_mapping, _merged_invocations(legacy, from_parts)) if m]
    return invocations or None


def _openai_tool_calls(message: Mapping[str, Any]) -> list[tuple[str, str | None, Any]]:
    """(name, id, raw arguments) of an OpenAI assistant message's `tool_calls`."""
    calls: list[tuple[str, str | None, Any]] = []
    for item in _as_list(message.get("tool_calls")) or []:
        call = _as_mapping(item)
        if call is None:
            continue
        function = _as_mapping(call.get("function")) or {}
        name = function.get("name")
        call_id = call.get("id")
        if isinstance(name, str) and name:
            calls.append(
                (name, call_id if isinstance(call_id, str) else None, function.get("arguments"))
            )
    return calls


_CALLED_STATES = ("call", "result", "output-error")


def extract_tool_calls(run_output: Any) -> ToolCalls:
    """Every tool call of the output (invocations in state `call`, `result` or `output-error`
    (a tool that threw), or OpenAI `tool_calls`), with where it was found."""
    calls = ToolCalls()
    for message_index, item in enumerate(_messages_of(run_output)):
        message = _as_mapping(item)
        if message is None:
            continue
        invocations = _agent_invocations(message)
        indexed: list[tuple[int, Any, Any]]
        if invocations is not None:
            # The index counts every invocation of the message, skipped states included.
            indexed = [
                (index, inv.get("toolName"), inv.get("toolCallId"))
                for index, inv in enumerate(invocations)
                if inv.get("state") in _CALLED_STATES
            ]
        else:
            indexed = [
                (index, name, call_id)
                for index, (name, call_id, _) in enumerate(_openai_tool_calls(message))
            ]
        for invocation_index, name, call_id in indexed:
            if not is_tool_name(name):
                continue
            calls.tools.append(name)
            calls.tool_call_infos.append(
                ToolCallInfo(
                    tool_name=name,
                    tool_call_id=call_id
                    if isinstance(call_id, str) and call_id
                    else f"{message_index}-{invocation_index}",
                    message_index=message_index,
                    invocation_index=invocation_index,
                )
            )
    return calls


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {}
        if isinstance(parsed, dict):
            return parsed
    return {}


def extract_tool_results(run_output: Any) -> list[ToolResultInfo]:
    """Every completed tool call of the output, in order.

    Agent messages: invocations in state `result` that carry a `result` key (a null result counts).
    OpenAI messages: each `role: "tool"` message, its name and arguments taken from the assistant
    `tool_calls` entry with the same id.
    """
    results: list[ToolResultInfo] = []
    requested: dict[str, tuple[str, Any]] = {}
    for item in _messages_of(run_output):
        message = _as_mapping(item)
        if message is None:
            continue
        invocations = _agent_invocations(message)
        if invocations is not None:
            for inv in invocations:
                if inv.get("state") == "result" and "result" in inv:
                    name = inv.get("toolName")
                    call_id = inv.get("toolCallId")
                    results.append(
                        ToolResultInfo(
                            tool_name=name if isinstance(name, str) else "",
                            tool_call_id=call_id if isinstance(call_id, str) else "",
                            args=_parse_arguments(inv.get("args")),
                            result=inv.get("result"),
                        )
                    )
            continue
        for name, call_id, arguments in _openai_tool_calls(message):
            if call_id:
                requested[call_id] = (name, arguments)
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            call_id = call_id if isinstance(call_id, str) else ""
            requested_name, arguments = requested.get(call_id, ("", None))
            own_name = message.get("name")
            content = message.get("content")
            parts = _as_list(content)
            results.append(
                ToolResultInfo(
                    tool_name=own_name
                    if isinstance(own_name, str) and own_name
                    else requested_name,
                    tool_call_id=call_id,
                    args=_parse_arguments(arguments),
                    result=(_last_text_part(parts) or "") if parts is not None else content,
                )
            )
    return results
