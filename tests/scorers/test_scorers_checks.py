"""Quick checks and the code variant of tool-call accuracy: 1/0 scores on fixed outputs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from scorer_runs import (
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
)
from scorewatch.core import ScorerRunError
from scorewatch.scorers import checks
from scorewatch.scorers.tool_call_accuracy_code import (
    called_in_order,
    create_tool_call_accuracy_code_scorer,
)

pytestmark = pytest.mark.unit


def openai_tools(*names: str, answer: str = "Done.") -> list[dict[str, Any]]:
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
        for i, n in enumerate(names)
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    if calls:
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    messages.append({"role": "assistant", "content": answer})
    return messages


def agent_tools(*names: str) -> list[dict[str, Any]]:
    invocations = [
        create_tool_invocation(tool_call_id=f"t{i}", tool_name=n, result="ok")
        for i, n in enumerate(names)
    ]
    return [create_test_message("Done.", "assistant", tool_invocations=invocations)]


async def score(scorer: Any, output: Any, **run: Any) -> float:
    result = await scorer.run(input=run.pop("input", "q"), output=output, **run)
    assert result.judge is None  # model-free: never a judge record
    return result.score


@pytest.mark.parametrize(
    ("scorer", "output", "expected"),
    [
        (checks.includes("sunny"), "It is SUNNY today", 1.0),
        (checks.includes("sunny", ignore_case=False), "It is SUNNY today", 0.0),
        (checks.includes("rain"), "It is sunny", 0.0),
        (checks.excludes("error"), "All good", 1.0),
        (checks.excludes("error"), "An Error happened", 0.0),
        (checks.equals("42"), "  42\n", 1.0),
        (checks.equals("42", strip=False), " 42", 0.0),
        (checks.equals("Paris"), "paris", 1.0),
        (checks.equals("Paris"), "Paris, France", 0.0),
        (checks.matches(r"\d+°[CF]"), "It is 21°C", 1.0),
        (checks.matches(r"\d+°[CF]", exact=True), "It is 21°C", 0.0),
        (checks.matches(re.compile(r"it is", re.I), exact=False), "IT IS", 1.0),
        (checks.includes("x"), "", 0.0),
        (checks.excludes("x"), "", 1.0),
    ],
)
async def test_text_checks_on_strings(scorer: Any, output: str, expected: float) -> None:
    assert await score(scorer, output) == expected
    assert scorer.direction == "higher_is_better"
    assert scorer.scale == 1


async def test_text_checks_read_every_assistant_message_in_both_shapes() -> None:
    openai = openai_tools("search", answer="Sunny and warm")
    agent = [
        create_test_message("Let me look.", "assistant", id="a1"),
        create_test_message("Sunny and warm", "assistant", id="a2"),
    ]
    for output in (openai, agent):
        assert await score(checks.includes("sunny"), output) == 1.0
        assert await score(checks.excludes("warm"), output) == 0.0
    assert await score(checks.includes("look"), agent) == 1.0


async def test_check_records_what_it_found() -> None:
    result = await checks.called_tool("search", times=2).run(
        input="q", output=openai_tools("search", "fetch", "search")
    )
    assert result.score == 1.0
    assert result.preprocess_step_result == {
        "tool_name": "search",
        "expected_times": 2,
        "actual_count": 2,
        "passed": True,
    }


@pytest.mark.parametrize("shape", [openai_tools, agent_tools])
async def test_tool_checks(shape: Any) -> None:
    output = shape("search", "summarize", "respond")
    none = shape()
    assert await score(checks.called_tool("search"), output) == 1.0
    assert await score(checks.called_tool("search", times=2), output) == 0.0
    assert await score(checks.called_tool("search"), none) == 0.0
    assert await score(checks.did_not_call("delete"), output) == 1.0
    assert await score(checks.did_not_call("search"), output) == 0.0
    assert await score(checks.max_tool_calls(3), output) == 1.0
    assert await score(checks.max_tool_calls(2), output) == 0.0
    assert await score(checks.max_tool_calls(0), none) == 1.0
    assert await score(checks.tool_order(["search", "respond"]), output) == 1.0
    assert await score(checks.tool_order(["respond", "search"]), output) == 0.0
    assert await score(checks.used_no_tools(), none) == 1.0
    assert await score(checks.used_no_tools(), output) == 0.0


def test_check_ids_and_configuration_errors() -> None:
    assert checks.called_tool("x").id == "check-called-tool"
    assert checks.includes("x", id="mine").id == "mine"
    assert [s["name"] for s in checks.includes("x").get_steps()] == [
        "preprocess",
        "generate_score",
    ]
    with pytest.raises(ValueError, match="times"):
        checks.called_tool("x", times=0)
    with pytest.raises(ValueError, match="limit"):
        checks.max_tool_calls(-1)
    with pytest.raises(ValueError, match="expected_order"):
        checks.tool_order([])
    with pytest.raises(TypeError):
        checks.includes(3)  # type: ignore[arg-type]


def test_called_in_order() -> None:
    assert called_in_order(["a", "x", "b"], ["a", "b"])
    assert not called_in_order(["b", "a"], ["a", "b"])
    assert not called_in_order(["a"], ["a", "b"])
    assert called_in_order(["a", "b"], ["a", "b"], strict=True)
    assert not called_in_order(["a", "x", "b"], ["a", "b"], strict=True)


@pytest.mark.parametrize("shape", [openai_tools, agent_tools])
async def test_tool_call_accuracy_code(shape: Any) -> None:
    make = create_tool_call_accuracy_code_scorer
    assert await score(make(expected_tool="weather"), shape("weather", "news")) == 1.0
    assert await score(make(expected_tool="weather"), shape("news")) == 0.0
    assert await score(make(expected_tool="weather", strict_mode=True), shape("weather")) == 1.0
    strict = make(expected_tool="weather", strict_mode=True)
    assert await score(strict, shape("weather", "news")) == 0.0
    ordered = make(expected_tool_order=["a", "b"])
    assert await score(ordered, shape("a", "x", "b")) == 1.0
    assert await score(ordered, shape("b", "a")) == 0.0
    strict_order = make(expected_tool_order=["a", "b"], strict_mode=True)
    assert await score(strict_order, shape("a", "x", "b")) == 0.0
    assert await score(strict_order, shape("a", "b")) == 1.0
    # No tool calls at all: 0, whatever was expected.
    assert await score(make(expected_tool="weather"), shape()) == 0.0


async def test_tool_call_accuracy_code_agent_run_and_configuration() -> None:
    scorer = create_tool_call_accuracy_code_scorer(expected_tool="weather")
    run = create_agent_test_run(
        input_messages=[create_test_message("Weather?", "user")], output=agent_tools("weather")
    )
    result = await scorer.run(**run)
    assert result.score == 1.0
    assert result.preprocess_step_result["actualTools"] == ["weather"]
    assert result.preprocess_step_result["toolCallInfos"][0]["toolName"] == "weather"
    assert (scorer.id, scorer.name) == (
        "code-tool-call-accuracy-scorer",
        "Tool Call Accuracy Scorer",
    )
    assert scorer.direction == "higher_is_better"
    with pytest.raises(ValueError, match="expected_tool"):
        create_tool_call_accuracy_code_scorer()


async def test_checks_read_a_chat_completion_response() -> None:
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Checking the weather.",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": "{}"},
                        }
                    ],
                },
            }
        ],
    }
    assert await score(checks.called_tool("weather"), response) == 1.0
    assert await score(checks.used_no_tools(), response) == 0.0
    assert await score(checks.includes("weather"), response) == 1.0
    accuracy = create_tool_call_accuracy_code_scorer(expected_tool="weather")
    assert await score(accuracy, response) == 1.0


def _parts_message(*invocations: dict[str, Any]) -> dict[str, Any]:
    parts = [{"type": "tool-invocation", "toolInvocation": inv} for inv in invocations]
    message = create_test_message("Sorry, the tool failed.", "assistant")
    message["content"]["parts"] = [*parts, *message["content"]["parts"]]
    return message


async def test_a_tool_that_threw_was_called() -> None:
    """State `output-error` counts as a call (the reference 1.10); `partial-call` does not."""
    failed = {"toolName": "weather", "toolCallId": "c1", "state": "output-error", "args": {}}
    partial = {"toolName": "weather", "toolCallId": "c2", "state": "partial-call", "args": {}}
    accuracy = create_tool_call_accuracy_code_scorer(expected_tool="weather")
    assert await score(accuracy, [_parts_message(failed)]) == 1
    assert await score(accuracy, [_parts_message(partial)]) == 0
    assert await score(checks.called_tool("weather"), [_parts_message(failed)]) == 1


async def test_parts_and_legacy_invocations_are_merged() -> None:
    legacy = create_tool_invocation(tool_call_id="a", tool_name="search", result="ok")
    failed = {"toolName": "weather", "toolCallId": "b", "state": "output-error", "args": {}}
    message = _parts_message(dict(legacy), failed)
    message["content"]["toolInvocations"] = [legacy]
    ordered = create_tool_call_accuracy_code_scorer(
        expected_tool_order=["search", "weather"], strict_mode=True
    )
    assert await score(ordered, [message]) == 1


async def test_tool_call_accuracy_code_needs_input_and_output_messages() -> None:
    accuracy = create_tool_call_accuracy_code_scorer(expected_tool="weather")
    with pytest.raises(ScorerRunError):
        await accuracy.run(input="q", output=[])
    with pytest.raises(ScorerRunError):
        await accuracy.run(input=None, output=agent_tools("weather"))
