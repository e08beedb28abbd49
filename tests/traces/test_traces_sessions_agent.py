"""A real instrumented agent (openai-v2 instrumentation against the loopback LLM) holding
several conversations at once, interleaved, one trace per turn: read from OTLP files, each
conversation is one session of its turns in order (`score_traces`, `extract_runs`)."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from scorewatch.scorers.multi_turn_judge import create_multi_turn_judge_scorer
from scorewatch.scorers.trajectory_accuracy_code import create_trajectory_accuracy_code_scorer
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply
from scorewatch.traces import SessionLimits, extract_runs, score_traces_sync
from traces_support import CONVERSATIONS, conversation_spans, otlp_json, texts

pytestmark = pytest.mark.integration

STEPS = [{"name": f"step_{k}"} for k in (1, 2, 3)]


@pytest.fixture(scope="module")
def spans() -> list[ReadableSpan]:
    return conversation_spans()


def test_interleaved_conversations_of_an_instrumented_agent_score_one_session_each(
    spans: list[ReadableSpan],
) -> None:
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len({s.context.trace_id for s in agents}) == 9  # one trace per turn
    verdict = json.dumps({"satisfied": True, "reasoning": "Each question was answered."})
    with LoopbackJudgeServer(Reply(text=verdict)) as judge:
        multi_turn = create_multi_turn_judge_scorer(
            "openai/loopback-judge",
            criterion="Every question is answered.",
            model_options={"api_base": judge.base_url, "api_key": "sk-loop", "timeout": 10.0},
        )
        in_order = create_trajectory_accuracy_code_scorer(
            expected_trajectory=STEPS, ordering="strict", allow_repeated_steps=False
        )
        scored = score_traces_sync(
            [multi_turn, in_order], otlp_json(spans), sessions=SessionLimits()
        )
        prompts = [str(r.messages[-1]["content"]) for r in judge.requests]
    assert sorted(s.conversation_id or "" for s in scored.spans) == list(CONVERSATIONS)
    assert {s.turns for s in scored.spans} == {3}
    assert scored.scores == {multi_turn.id: 1.0, in_order.id: 1.0}  # steps 1, 2, 3 in order
    assert scored.sessions == {"closed_flush": 3}
    assert len(prompts) == 3
    for conversation in CONVERSATIONS:
        (prompt,) = [p for p in prompts if f"re: {conversation} turn 1" in p]
        assert (
            f"turn 1: re: {conversation} turn 1\n\nAssistant, turn 2: re: {conversation} turn 2"
            "\n\nAssistant, turn 3: " in prompt
        )
    extraction = extract_runs(otlp_json(spans), sessions=SessionLimits())
    for run in extraction.runs:
        assert run.session is not None
        conversation = run.conversation_id
        assert texts(run.output) == [f"re: {conversation} turn {k}" for k in (1, 2, 3)]
        first, last = run.session["firstTraceId"], run.session["lastTraceId"]
        assert run.trace_id == first != last and len(run.session["traceIds"]) == 3


def test_a_gap_between_turns_in_a_file_splits_a_conversation_and_the_end_marker_closes_it(
    spans: list[ReadableSpan],
) -> None:
    tiny_gap = SessionLimits(idle_s=1e-9)  # every gap between two turns is longer
    split = extract_runs(otlp_json(spans), sessions=tiny_gap)
    assert len(split.runs) == 9 and split.sessions is not None
    assert split.sessions.closed == {"idle": 8, "flush": 1}  # the last turn is flushed
    marked = extract_runs(
        otlp_json(conversation_spans(2, end_marked=True)), sessions=SessionLimits()
    )
    assert marked.sessions is not None and marked.sessions.closed == {"end": 3}
    assert all(run.ends_conversation for run in marked.runs)
