"""Builders of scorer runs for the scorer tests: agent messages, tool invocations and runs in the
reference system's shapes (`createAgentTestRun` and friends), kept out of the package."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "create_agent_test_run",
    "create_test_message",
    "create_test_run",
    "create_tool_invocation",
]


def create_tool_invocation(
    *,
    tool_call_id: str,
    tool_name: str,
    args: Mapping[str, Any] | None = None,
    result: Any = None,
    state: str = "result",
) -> dict[str, Any]:
    """A tool invocation in the reference system's (camelCase) shape."""
    return {
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "args": dict(args or {}),
        "result": result,
        "state": state,
    }


def create_test_message(
    content: str,
    role: str,
    *,
    id: str = "test-message",
    tool_invocations: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """An agent message (format 2: one text part, plus `content.content`)."""
    body: dict[str, Any] = {
        "format": 2,
        "parts": [{"type": "text", "text": content}],
        "content": content,
    }
    if tool_invocations:
        body["toolInvocations"] = [
            {
                "toolCallId": invocation.get("toolCallId"),
                "toolName": invocation.get("toolName"),
                "args": invocation.get("args"),
                "result": invocation.get("result"),
                "state": invocation.get("state"),
            }
            for invocation in tool_invocations
        ]
    return {"id": id, "role": role, "content": body, "createdAt": datetime.now(UTC)}


def create_agent_test_run(
    *,
    output: list[Any],
    input_messages: list[Any] | None = None,
    remembered_messages: list[Any] | None = None,
    system_messages: list[Any] | None = None,
    tagged_system_messages: dict[str, list[Any]] | None = None,
    request_context: dict[str, Any] | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """An agent run; `await scorer.run(**create_agent_test_run(...))` scores it."""
    return {
        "input": {
            "inputMessages": list(input_messages or []),
            "rememberedMessages": list(remembered_messages or []),
            "systemMessages": list(system_messages or []),
            "taggedSystemMessages": dict(tagged_system_messages or {}),
        },
        "output": output,
        "request_context": dict(request_context or {}),
        "run_id": run_id or str(uuid.uuid4()),
    }


def create_test_run(
    input: str,
    output: str,
    additional_context: Mapping[str, Any] | None = None,
    request_context: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A plain run: one user message in, one `{role: assistant, text}` out."""
    return {
        "input": [{"role": "user", "content": input}],
        "output": {"role": "assistant", "text": output},
        "additional_context": dict(additional_context or {}),
        "request_context": dict(request_context or {}),
    }
