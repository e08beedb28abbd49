"""Each trace convention is one record, and every part of span reading follows it: a trace
written only from a record's own fields (its agent marker and name, its tool spans, its retriever
spans) is selected by default and read into a run with the agent, the tool call and the
documents. A new record in `CONVENTIONS` is covered here without a new test."""

from __future__ import annotations

from typing import Any

import pytest

from scorewatch.traces import (
    DEFAULT_SELECTORS,
    ExtractedRun,
    SpanRecord,
    TraceBuffer,
    extract_run,
)
from scorewatch.traces.conventions import CONVENTIONS, Convention
from scorewatch.traces.select import matching_selector

pytestmark = pytest.mark.unit

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"

# The user's question on the agent span, in each convention's own message attributes: a run
# with tool calls but no text is `no_content` and never scored, so the question is what makes
# the agent's run scorable. A new record needs its line here.
QUESTION: dict[str, dict[str, Any]] = {
    "gen_ai": {
        "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", '
        '"content": "Where is order 7?"}]}]'
    },
    "openinference": {"input.value": "Where is order 7?"},
    "openllmetry": {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Where is order 7?"},
}


def _span(number: int, parent: int | None, name: str, **attributes: Any) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=f"{number:016x}",
        parent_span_id=f"{parent:016x}" if parent is not None else None,
        name=name,
        start_ns=number * 1000,
        end_ns=number * 1000 + 500,
        attributes=attributes,
        resource={"service.name": "shop"},
    )


def _trace(convention: Convention, *, question: bool = True) -> list[SpanRecord]:
    """An agent asked a question calling one tool (and, where the convention has retrievers,
    retrieving one document), in attributes the record names and nothing else."""
    tools = convention.tool_spans
    agent = _span(
        1,
        None,
        "agent run",
        **{
            convention.agent.attribute: convention.agent.values[0],
            convention.agent_name[0]: "order-bot",
            **(QUESTION[convention.name] if question else {}),
        },
    )
    tool = _span(
        2,
        1,
        "tool run",
        **{
            tools.marker.attribute: tools.marker.values[0],
            tools.name: "lookup_order",
            tools.arguments: '{"order": 7}',
            tools.result: '"shipped"',
            **({tools.call_id: "call-1"} if tools.call_id else {}),
        },
    )
    spans = [agent, tool]
    if convention.documents is not None:
        documents = convention.documents
        spans.append(
            _span(
                3,
                1,
                "retrieve",
                **{
                    documents.marker.attribute: documents.marker.values[0],
                    f"{documents.prefix}.0.{documents.text}": "Order 7 left on Monday.",
                },
            )
        )
    return spans


@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.name)
def test_a_trace_in_a_conventions_own_terms_is_selected_and_read(convention: Convention) -> None:
    spans = _trace(convention)
    agent = spans[0]
    assert matching_selector(agent, DEFAULT_SELECTORS) is not None
    assert all(selector in DEFAULT_SELECTORS for selector in convention.selects)

    run = extract_run(agent, spans)
    assert isinstance(run, ExtractedRun), run
    assert run.agent == "order-bot"
    assert run.entity_type == "agent"
    assert run.tool_calls == ["lookup_order"]
    (invocation,) = run.output[0]["content"]["toolInvocations"]
    assert invocation["args"] == {"order": 7}
    assert invocation["result"] == "shipped"
    assert invocation["toolCallId"] == (
        "call-1" if convention.tool_spans.call_id else spans[1].span_id
    )
    if convention.documents is not None:
        assert run.input["context"] == ["Order 7 left on Monday."]
    else:
        assert "context" not in run.input


@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.name)
def test_a_conventions_agent_is_scored_once_not_again_for_its_tool(convention: Convention) -> None:
    buffer = TraceBuffer()
    buffer.add(_trace(convention))
    ready = buffer.pop_ready(flush=True)
    assert [item.span.span_id for item in ready] == [f"{1:016x}"]


@pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda c: c.name)
def test_a_conventions_agent_with_tools_but_no_text_is_not_scored(convention: Convention) -> None:
    spans = _trace(convention, question=False)
    run = extract_run(spans[0], spans)
    assert not isinstance(run, ExtractedRun)
    assert run.reason == "no_content"


def test_the_conventions_are_tried_in_order_and_named_once() -> None:
    names = [convention.name for convention in CONVENTIONS]
    assert names == ["gen_ai", "openinference", "openllmetry"]
    assert tuple(s for c in CONVENTIONS for s in c.selects) == DEFAULT_SELECTORS
