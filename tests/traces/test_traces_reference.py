"""A scored trace's run against the reference system (@mastra/core 1.71.0).

Each case of tools/reference/trace_cases.json is a trace in the reference's own span form (an
`agent_run` span, its `model_generation` and `tool_call` children), run through the reference's
`scoreTrace` with an agent-type scorer that keeps the run it is given. Here the same trace is
written as the OpenTelemetry GenAI spans an instrumented agent exports (`invoke_agent`, `chat`,
`execute_tool`), and scorewatch's run of the agent span must be the reference's: the input
(current turn, remembered conversation, system messages), the output message with its tool
invocations, when each message was sent, and the trace fields of the run. Regenerate with
tools/reference/record_trace_runs.mjs.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from reference_fixtures import load_reference
from scorewatch import create_scorer
from scorewatch.scorers.utils import (
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_user_message_from_run_input,
)
from scorewatch.sinks import ScoreRecord
from scorewatch.traces import ExtractedRun, SpanRecord, extract_run

pytestmark = pytest.mark.unit

CASES = json.loads(
    (Path(__file__).parents[2] / "tools" / "reference" / "trace_cases.json").read_text("utf-8")
)
RECORDED = {case["name"]: case for case in load_reference("traces/recorded.json")["cases"]}
# The reference builds an agent run from the trace for an agent-type scorer; any other scorer
# gets the target span's own input and output ("scorerType": "default": a model call's span).
AGENT_CASES = [case for case in CASES if case.get("scorerType") != "default"]
MODEL_CALL_CASES = [case for case in CASES if case.get("scorerType") == "default"]


def _nanoseconds(stamp: str) -> int:
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def _parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reference's message content as GenAI message parts."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content:
        if part["type"] == "text":
            parts.append({"type": "text", "content": part["text"]})
        elif part["type"] == "tool-call":
            parts.append(
                {
                    "type": "tool_call",
                    "id": part["toolCallId"],
                    "name": part["toolName"],
                    "arguments": part["args"],
                }
            )
        elif part["type"] == "tool-result":
            parts.append(
                {"type": "tool_call_response", "id": part["toolCallId"], "response": part["result"]}
            )
    return parts


def _messages(messages: list[dict[str, Any]]) -> str:
    return json.dumps([{"role": m["role"], "parts": _parts(m["content"])} for m in messages])


def _genai_span(span: dict[str, Any]) -> SpanRecord:
    """The reference span as the GenAI semantic conventions record the same step."""
    attributes: dict[str, Any] = {}
    if span["spanType"] == "agent_run":
        given = span["input"]
        inputs = [{"role": "user", "content": given}] if isinstance(given, str) else given
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": span["entityId"],
            "gen_ai.agent.name": span["entityName"],
            "gen_ai.input.messages": _messages(inputs),
            "gen_ai.output.messages": _messages(
                [{"role": "assistant", "content": span["output"]["text"]}]
            ),
        }
    elif span["spanType"] == "model_generation":
        messages = span["input"]["messages"]
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system_instructions": json.dumps(
                [part for m in messages if m["role"] == "system" for part in _parts(m["content"])]
            ),
            "gen_ai.input.messages": _messages([m for m in messages if m["role"] != "system"]),
            "gen_ai.output.messages": _messages(
                [{"role": "assistant", "content": span["output"]["text"]}]
            ),
        }
    elif span["spanType"] == "tool_call":
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": span["entityName"],
            "gen_ai.tool.call.arguments": json.dumps(span["input"]),
            "gen_ai.tool.call.result": json.dumps(span["output"]),
        }
    return SpanRecord(
        trace_id=span["traceId"],
        span_id=span["spanId"],
        name=span["name"],
        parent_span_id=span["parentSpanId"],
        start_ns=_nanoseconds(span["startedAt"]),
        end_ns=_nanoseconds(span["endedAt"]),
        attributes=attributes,
    )


def _instant(stamp: str | datetime) -> int:
    return _nanoseconds(stamp if isinstance(stamp, str) else stamp.isoformat())


def _comparable(value: Any) -> Any:
    """JSON-like data with every `createdAt` as an instant: the reference writes a JavaScript
    `Date` as text with milliseconds, scorewatch hands scorers a `datetime`."""
    if isinstance(value, dict):
        return {
            key: _instant(item) if key == "createdAt" else _comparable(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    return value


def _extracted(case: dict[str, Any]) -> ExtractedRun:
    spans = [_genai_span(span) for span in case["spans"]]
    target = next(span for span in spans if span.span_id == case["target"])
    extracted = extract_run(target, spans)
    assert isinstance(extracted, ExtractedRun), extracted
    return extracted


@pytest.mark.parametrize("case", AGENT_CASES, ids=[case["name"] for case in AGENT_CASES])
def test_a_traced_agent_run_is_the_run_the_reference_builds(case: dict[str, Any]) -> None:
    recorded = RECORDED[case["name"]]["run"]
    extracted = _extracted(case)
    assert _comparable(extracted.input) == _comparable(recorded["input"])
    assert _comparable(extracted.output) == _comparable(recorded["output"])


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_a_traced_run_carries_the_reference_trace_fields(case: dict[str, Any]) -> None:
    recorded = RECORDED[case["name"]]["run"]
    fields = _extracted(case).run_fields()
    assert fields["score_source"] == recorded["scoreSource"] == "trace"
    assert fields["target_scope"] == recorded["targetScope"]
    # `agent` for an agent span; none for a model call (the reference leaves it undefined).
    assert fields["target_entity_type"] == recorded.get("targetEntityType")
    assert fields["target_trace_id"] == recorded["targetTraceId"]
    assert fields["target_span_id"] == recorded["targetSpanId"]
    assert fields["target_correlation_context"] == recorded["targetCorrelationContext"]
    # The reference puts only tenancy there (none in these traces); scorewatch adds where the
    # run came from: the span's name and the convention it was read in.
    assert recorded["targetMetadata"] == {}
    assert set(fields["target_metadata"]) == {"spanName", "spanType", "convention"}


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
async def test_a_traced_score_row_names_the_span_as_the_reference_does(
    case: dict[str, Any],
) -> None:
    """The row `score_traces` stores (an experiment row about the span's call) against the
    score the reference saves for the same trace."""
    saved = RECORDED[case["name"]]["saved"]
    extracted = _extracted(case)
    run = extracted.scorer_run()
    scorer = create_scorer(id=saved["scorerId"], description="d").generate_score(lambda _ctx: 1)
    result = await scorer.run(run)
    call = dataclasses.replace(extracted.to_call(), run_id="experiment-1")
    row = ScoreRecord.success(result.run_id or "", scorer, call, result, "TEST").to_row()
    for column in ("traceId", "spanId", "entityType", "entity", "source", "scorerId", "score"):
        assert row[column] == saved[column], column
    span = next(span for span in case["spans"] if span["spanId"] == case["target"])
    if "entityName" in span:
        # The reference's entityId is the agent's id; scorewatch's, the agent's name.
        assert (saved["entityId"], row["entityId"]) == (span["entityId"], span["entityName"])
    else:  # a span that names no agent
        assert row["entityId"] == saved["entityId"] == "unknown"


@pytest.mark.parametrize("case", MODEL_CALL_CASES, ids=[case["name"] for case in MODEL_CALL_CASES])
def test_a_traced_model_call_reads_the_messages_the_reference_hands_over(
    case: dict[str, Any],
) -> None:
    """The reference hands a scorer a model call's span input and output as they are;
    scorewatch reads the same messages into the agent-run shape every trace run has, so one
    scorer reads any run alike."""
    recorded = RECORDED[case["name"]]["run"]
    messages = recorded["input"]["messages"]
    run = _extracted(case)
    assert get_combined_system_prompt(run.input) == next(
        m["content"] for m in messages if m["role"] == "system"
    )
    assert get_user_message_from_run_input(run.input) == messages[-1]["content"]
    assert get_assistant_message_from_run_output(run.output) == recorded["output"]["text"]
