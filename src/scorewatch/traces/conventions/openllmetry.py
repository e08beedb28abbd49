"""OpenLLMetry (Traceloop).

Messages: `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` (what its older releases write; current
ones write the GenAI message attributes), else `traceloop.entity.input` /
`traceloop.entity.output`. `traceloop.span.kind` marks agents and workflows (`agent`,
`workflow`) and tools (`tool`); `llm.request.type` marks model calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..messages import from_json_text, text_of
from ..select import SpanSelector
from ._flattened import FlattenedMessages, ToolCallFields
from ._record import Convention, Marker, ToolSpans

__all__ = ["OPENLLMETRY"]

_KIND = "traceloop.span.kind"


def _text(fields: Mapping[str, Any]) -> str:
    return text_of(from_json_text(fields.get("content")))


OPENLLMETRY = Convention(
    name="openllmetry",
    read=FlattenedMessages(
        "openllmetry",
        messages=("gen_ai.prompt", "gen_ai.completion"),
        values=("traceloop.entity.input", "traceloop.entity.output"),
        role="role",
        text=_text,
        tool_calls=ToolCallFields("tool_calls", name="name", arguments="arguments", id="id"),
        tool_call_id="tool_call_id",
    ),
    agent=Marker(_KIND, ("agent", "workflow")),
    agent_name=("traceloop.entity.name",),
    tool_spans=ToolSpans(
        Marker(_KIND, ("tool",)),
        name="traceloop.entity.name",
        call_id=None,
        arguments="traceloop.entity.input",
        result="traceloop.entity.output",
    ),
    # A workflow is read as an agent, but scored only when a selector asks for it.
    selects=(
        SpanSelector(attributes={_KIND: "agent"}),
        SpanSelector(attributes={"llm.request.type": "chat"}),
        SpanSelector(attributes={"llm.request.type": "completion"}),
    ),
)
