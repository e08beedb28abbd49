"""Asking for JSON in the prompt, for models without a native JSON-schema response format."""

from __future__ import annotations

import json
from typing import Any, Literal

from .protocol import JsonPromptInjection, JudgeRequest

__all__ = ["json_instruction", "render_messages", "resolve_injection"]

Placement = Literal["native", "system", "inline"]


def resolve_injection(mode: JsonPromptInjection, *, supports_native: bool) -> Placement:
    """Where the schema goes for this call: the provider's response format or the prompt."""
    if mode == "auto":
        return "native" if supports_native else "system"
    if mode is True or mode == "system":
        return "system"
    if mode == "inline":
        return "inline"
    return "native"


def json_instruction(schema: dict[str, Any]) -> str:
    return (
        "Respond with a single JSON object and nothing else: no prose, no markdown fences. "
        "The object must conform to this JSON schema:\n"
        + json.dumps(schema, separators=(",", ":"), sort_keys=True)
    )


def render_messages(request: JudgeRequest, placement: Placement) -> list[dict[str, str]]:
    """Chat messages for the request, with the JSON instruction placed as asked."""
    instructions = request.instructions
    prompt = request.prompt
    if request.schema is not None and placement != "native":
        text = json_instruction(request.schema)
        if placement == "system":
            instructions = f"{instructions}\n\n{text}" if instructions else text
        else:
            prompt = f"{prompt}\n\n{text}"
    messages = [{"role": "system", "content": instructions}] if instructions else []
    messages.append({"role": "user", "content": prompt})
    return messages
