"""A pydantic-ai agent (its own OpenTelemetry instrumentation, the GenAI conventions) calling two
tools through its OpenAI model against the loopback server: the run built from its trace holds
the tool calls in order, with their arguments and results."""

from __future__ import annotations

import pytest

from scorewatch.scorers.tool_call_accuracy_code import create_tool_call_accuracy_code_scorer
from scorewatch.scorers.trajectory_accuracy_code import create_trajectory_accuracy_code_scorer
from scorewatch.scorers.utils import (
    extract_tool_results,
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_user_message_from_run_input,
)
from scorewatch.traces import extract_runs, score_traces_sync
from traces_support import pydantic_ai_agent_trace

pytestmark = pytest.mark.integration


def test_pydantic_ai_agent_run_has_its_tool_calls_in_order() -> None:
    document = pydantic_ai_agent_trace()
    extraction = extract_runs(document)
    assert extraction.skipped == {"nested": 3}  # its three model calls, inside the agent
    (run,) = extraction.runs
    assert run.span_name == "invoke_agent shop" and run.agent == "shop"
    assert run.tool_calls == ["lookup_order", "notify_customer"]
    assert [
        (r.tool_call_id, r.tool_name, r.args, r.result) for r in extract_tool_results(run.output)
    ] == [
        ("call_a", "lookup_order", {"order_id": 7}, {"order": 7, "status": "shipped"}),
        ("call_b", "notify_customer", {"name": "ann"}, "sent to ann"),
    ]
    assert get_user_message_from_run_input(run.input) == "Where is order 7?"
    assert get_combined_system_prompt(run.input) == "You track orders."
    assert get_assistant_message_from_run_output(run.output) == "Order 7 has shipped; Ann was told."

    in_order = create_tool_call_accuracy_code_scorer(
        expected_tool_order=["lookup_order", "notify_customer"], strict_mode=True
    )
    # The trajectory scorers read the same run: its steps are the tool calls, in order.
    strict = create_trajectory_accuracy_code_scorer(
        expected_trajectory=[{"name": "lookup_order"}, {"name": "notify_customer"}],
        ordering="strict",
    )
    swapped = create_trajectory_accuracy_code_scorer(
        expected_trajectory=[{"name": "notify_customer"}, {"name": "lookup_order"}],
        ordering="strict",
    )
    scored = score_traces_sync([in_order, strict], document)
    assert scored.scores == {in_order.id: 1, strict.id: 1}
    steps = swapped.run_sync(run.scorer_run())
    assert steps.score is not None and steps.score < 1
    assert (scored.spans[0].trace_id, scored.spans[0].span_id) == (run.trace_id, run.span_id)


def test_each_model_call_of_the_agent_sees_the_turns_tool_calls() -> None:
    from scorewatch.traces import SpanSelector

    extraction = extract_runs(pydantic_ai_agent_trace(), select=[SpanSelector(operation=["chat"])])
    calls = [run.tool_calls for run in extraction.runs]
    # First call: asks for lookup_order; second: has its result, asks for notify_customer;
    # third: has both results and answers.
    assert calls == [
        ["lookup_order"],
        ["lookup_order", "notify_customer"],
        ["lookup_order", "notify_customer"],
    ]
    states = [
        [inv["state"] for inv in run.output[0]["content"]["toolInvocations"]]
        for run in extraction.runs
    ]
    assert states == [["call"], ["result", "call"], ["result", "result"]]
