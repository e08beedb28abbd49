"""Message-extraction helpers: the reference system's agent shapes and OpenAI-style messages."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from scorer_runs import (
    create_agent_test_run,
    create_test_message,
    create_test_run,
    create_tool_invocation,
)
from scorewatch.scorers.utils import (
    ToolCallInfo,
    ToolResultInfo,
    extract_agent_response_messages,
    extract_input_messages,
    extract_tool_calls,
    extract_tool_results,
    format_number,
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_reasoning_from_run_output,
    get_system_messages_from_run_input,
    get_text_content_from_message,
    get_user_message_from_run_input,
    is_closer_to,
    is_scorer_run_input_for_agent,
    is_scorer_run_output_for_agent,
    round_to_two_decimals,
)

pytestmark = pytest.mark.unit

# ---------------------------------------------------------------------------------- item 74


def test_round_to_two_decimals_rounds_half_up() -> None:
    assert round_to_two_decimals(1.005) == 1.01
    assert round_to_two_decimals(0.1 + 0.2) == 0.3
    assert round_to_two_decimals(2 / 3) == 0.67
    assert round_to_two_decimals(0.125) == 0.13  # Python's round() would give 0.12
    assert round_to_two_decimals(0) == 0


def test_is_closer_to() -> None:
    assert is_closer_to(0.6, 1, 0)
    assert not is_closer_to(0.3, 1, 0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (1, "1"),
        (0.5, "0.5"),
        (0.67, "0.67"),
        (10.0, "10"),
        (0.0, "0"),
        (-0.0, "0"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (1.5e-10, "1.5e-10"),
        (123.456, "123.456"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
    ],
)
def test_format_number_prints_like_javascript(value: float, expected: str) -> None:
    assert format_number(value) == expected


# ---------------------------------------------------------------------------------- item 71


def test_user_message_from_each_input_shape() -> None:
    agent = create_agent_test_run(
        input_messages=[
            create_test_message("be nice", "system", id="s"),
            create_test_message("agent question", "user", id="u"),
        ],
        output=[],
    )["input"]
    assert get_user_message_from_run_input("bare string") == "bare string"
    assert get_user_message_from_run_input(agent) == "agent question"
    assert (
        get_user_message_from_run_input(
            {
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "first user"},
                    {"role": "user", "content": "second user"},
                ]
            }
        )
        == "first user"
    )
    assert get_user_message_from_run_input({"prompt": "from prompt"}) == "from prompt"
    assert get_user_message_from_run_input({"text": "from text"}) == "from text"
    assert get_user_message_from_run_input({"content": "from content"}) == "from content"
    assert (
        get_user_message_from_run_input({"content": [{"type": "text", "text": "part"}]}) == "part"
    )
    assert get_user_message_from_run_input({"input": {"text": "nested"}}) == "nested"
    assert get_user_message_from_run_input({"user": "u"}) == "u"
    assert get_user_message_from_run_input({"other": 1}) is None
    assert get_user_message_from_run_input(None) is None
    assert get_user_message_from_run_input(42) is None


def test_user_message_prefers_input_messages_over_messages_and_prompt() -> None:
    run_input = {
        "inputMessages": [{"role": "user", "content": "winner"}],
        "messages": [{"role": "user", "content": "loser"}],
        "prompt": "also loser",
    }
    assert get_user_message_from_run_input(run_input) == "winner"


def test_user_message_from_openai_shapes() -> None:
    parts = [
        {"type": "text", "text": "ignored preamble"},
        {"type": "image_url", "image_url": {"url": "data:"}},
        {"type": "text", "text": "last text part"},
    ]
    assert get_user_message_from_run_input({"messages": [{"role": "user", "content": parts}]}) == (
        "last text part"
    )
    # A bare OpenAI message list, as passed to chat.completions.create(messages=...).
    assert get_user_message_from_run_input([{"role": "user", "content": "hi"}]) == "hi"
    # None content falls through to the next candidate instead of crashing.
    assert (
        get_user_message_from_run_input(
            {"messages": [{"role": "user", "content": None}], "prompt": "fallback"}
        )
        == "fallback"
    )


def test_user_message_from_pydantic_messages() -> None:
    class Message(BaseModel):
        role: str
        content: str | None

    assert get_user_message_from_run_input({"messages": [Message(role="user", content="m")]}) == "m"


# ---------------------------------------------------------------------------------- item 72


def test_assistant_message_is_the_first_assistant_text_of_a_list() -> None:
    output = [
        create_test_message("question", "user", id="u"),
        create_test_message("first answer", "assistant", id="a1"),
        create_test_message("second answer", "assistant", id="a2"),
    ]
    assert get_assistant_message_from_run_output(output) == "first answer"


def test_assistant_message_from_other_shapes() -> None:
    assert get_assistant_message_from_run_output("plain") == "plain"
    assert get_assistant_message_from_run_output({"text": "workflow text"}) == "workflow text"
    assert get_assistant_message_from_run_output({"content": "task content"}) == "task content"
    assert (
        get_assistant_message_from_run_output({"role": "assistant", "content": "one message"})
        == "one message"
    )
    assert get_assistant_message_from_run_output(create_test_message("db", "assistant")) == "db"
    assert get_assistant_message_from_run_output({"role": "user", "content": "no"}) is None
    assert get_assistant_message_from_run_output(None) is None
    assert get_assistant_message_from_run_output([]) is None


def test_assistant_message_from_openai_shapes() -> None:
    assert (
        get_assistant_message_from_run_output(
            {"role": "assistant", "content": [{"type": "text", "text": "from parts"}]}
        )
        == "from parts"
    )
    assert get_assistant_message_from_run_output({"role": "assistant", "content": None}) is None
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "chosen"}}]}
    assert get_assistant_message_from_run_output(completion) == "chosen"


# ---------------------------------------------------------------------------------- text


def test_text_content_from_message_variants() -> None:
    assert get_text_content_from_message({"content": "s"}) == "s"
    assert (
        get_text_content_from_message(
            {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
        )
        == "b"
    )
    assert get_text_content_from_message({"content": {"content": "c", "parts": []}}) == "c"
    assert get_text_content_from_message({"content": {"text": "t"}}) == "t"
    assert (
        get_text_content_from_message(
            {"content": {"content": "", "parts": [{"type": "text", "text": "p"}]}}
        )
        == "p"
    )
    assert get_text_content_from_message({"role": "assistant", "content": None}) == ""
    assert get_text_content_from_message({"content": [{"type": "image"}]}) == ""
    assert get_text_content_from_message({"content": [{"type": "output_text", "text": "r"}]}) == "r"


def test_agent_response_messages_are_every_assistant_text_in_order() -> None:
    output = [
        create_test_message("", "assistant", id="a1"),
        create_test_message("u", "user", id="u1"),
        create_test_message("final", "assistant", id="a2"),
    ]
    assert extract_agent_response_messages(output) == ["", "final"]
    openai_output = [
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "x", "content": "r"},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    assert extract_agent_response_messages(openai_output) == ["", "done"]
    assert extract_agent_response_messages({"role": "assistant", "content": "single"}) == ["single"]


def test_extract_input_messages() -> None:
    run = create_agent_test_run(
        input_messages=[create_test_message("a", "user", id="1"), create_test_message("b", "user")],
        output=[],
    )
    assert extract_input_messages(run["input"]) == ["a", "b"]
    openai = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]}
    assert extract_input_messages(openai) == ["q"]
    assert extract_input_messages("only") == ["only"]
    assert extract_input_messages(None) == []


def test_system_messages_from_every_source() -> None:
    run_input = {
        "inputMessages": [{"role": "system", "content": "inline system"}],
        "rememberedMessages": [],
        "systemMessages": [
            {"role": "system", "content": "plain"},
            {
                "role": "system",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {"role": "system", "content": ""},
        ],
        "taggedSystemMessages": {"memory": [{"role": "system", "content": "tagged"}]},
    }
    assert get_system_messages_from_run_input(run_input) == [
        "plain",
        "a b",
        "inline system",
        "tagged",
    ]
    assert get_combined_system_prompt(run_input) == "plain\n\na b\n\ninline system\n\ntagged"
    openai = [{"role": "system", "content": "sys"}, {"role": "user", "content": "u"}]
    assert get_system_messages_from_run_input(openai) == ["sys"]
    assert get_combined_system_prompt(None) == ""


# ---------------------------------------------------------------------------------- item 75


def test_reasoning_from_content_reasoning() -> None:
    message = create_test_message("answer", "assistant")
    message["content"]["reasoning"] = "I thought about it"
    assert get_reasoning_from_run_output([message]) == "I thought about it"


def test_reasoning_from_reasoning_parts() -> None:
    message = create_test_message("answer", "assistant")
    message["content"]["parts"] = [
        {
            "type": "reasoning",
            "details": [{"type": "text", "text": "step "}, {"type": "text", "text": "one"}],
        },
        {"type": "reasoning", "reasoning": "step two"},
        {"type": "text", "text": "answer"},
    ]
    assert get_reasoning_from_run_output([message]) == "step one\nstep two"


def test_reasoning_absent_and_openai_fields() -> None:
    assert get_reasoning_from_run_output([create_test_message("a", "assistant")]) is None
    assert get_reasoning_from_run_output([]) is None
    assert get_reasoning_from_run_output(None) is None
    assert (
        get_reasoning_from_run_output(
            [{"role": "assistant", "content": "a", "reasoning_content": "deep thought"}]
        )
        == "deep thought"
    )


# ---------------------------------------------------------------------------------- item 73


def test_tool_results_from_legacy_invocations_only_completed_ones() -> None:
    message = create_test_message(
        "",
        "assistant",
        tool_invocations=[
            create_tool_invocation(
                tool_call_id="c1", tool_name="weather", args={"city": "Paris"}, result={"t": 22}
            ),
            create_tool_invocation(tool_call_id="c2", tool_name="pending", args={}, state="call"),
            {"toolCallId": "c3", "toolName": "no-result", "args": {}, "state": "result"},
            create_tool_invocation(tool_call_id="c4", tool_name="null-result", result=None),
        ],
    )
    # The builder copies every field, so c3 gets an explicit None result; rebuild it without one.
    del message["content"]["toolInvocations"][2]["result"]
    results = extract_tool_results([message])
    assert results == [
        ToolResultInfo(
            tool_name="weather", tool_call_id="c1", args={"city": "Paris"}, result={"t": 22}
        ),
        ToolResultInfo(tool_name="null-result", tool_call_id="c4", args={}, result=None),
    ]


def test_tool_results_from_tool_invocation_parts() -> None:
    message = create_test_message("", "assistant")
    message["content"]["parts"] = [
        {
            "type": "tool-invocation",
            "toolInvocation": {"toolName": "fetch", "state": "result", "result": "doc"},
        },
        {
            "type": "tool-invocation",
            "toolInvocation": {"toolName": "later", "toolCallId": "x", "state": "call"},
        },
    ]
    assert extract_tool_results([message]) == [
        ToolResultInfo(tool_name="fetch", tool_call_id="", args={}, result="doc")
    ]


def test_tool_results_from_openai_messages() -> None:
    output = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "fetchDocument", "arguments": '{"url": "u"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "the document"},
        {"role": "tool", "tool_call_id": "unknown", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": "summary"},
    ]
    assert extract_tool_results(output) == [
        ToolResultInfo(
            tool_name="fetchDocument",
            tool_call_id="call_1",
            args={"url": "u"},
            result="the document",
        ),
        ToolResultInfo(tool_name="", tool_call_id="unknown", args={}, result="x"),
    ]


def test_tool_calls_from_agent_and_openai_messages() -> None:
    agent = create_test_message(
        "",
        "assistant",
        id="a",
        tool_invocations=[
            create_tool_invocation(tool_call_id="", tool_name="search", result={}),
            create_tool_invocation(tool_call_id="p", tool_name="partial", state="partial-call"),
            create_tool_invocation(tool_call_id="k", tool_name="calc", state="call"),
        ],
    )
    openai = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_9", "function": {"name": "lookup", "arguments": "{}"}}],
    }
    calls = extract_tool_calls([agent, openai])
    assert calls.tools == ["search", "calc", "lookup"]
    assert calls.tool_call_infos == [
        ToolCallInfo(tool_name="search", tool_call_id="0-0", message_index=0, invocation_index=0),
        ToolCallInfo(tool_name="calc", tool_call_id="k", message_index=0, invocation_index=2),
        ToolCallInfo(
            tool_name="lookup", tool_call_id="call_9", message_index=1, invocation_index=0
        ),
    ]
    assert extract_tool_calls(None).tools == []


# ---------------------------------------------------------------------------------- builders


def test_builders_produce_agent_shapes() -> None:
    message = create_test_message("hello", "assistant", id="m1")
    assert message["content"] == {
        "format": 2,
        "parts": [{"type": "text", "text": "hello"}],
        "content": "hello",
    }
    run = create_agent_test_run(output=[message], input_messages=[create_test_message("q", "user")])
    assert is_scorer_run_input_for_agent(run["input"])
    assert is_scorer_run_output_for_agent(run["output"])
    assert set(run) == {"input", "output", "request_context", "run_id"}
    assert run["run_id"] != create_agent_test_run(output=[])["run_id"]
    assert not is_scorer_run_input_for_agent({"messages": []})
    assert not is_scorer_run_output_for_agent([{"role": "assistant", "content": "x"}])
    assert is_scorer_run_output_for_agent([])


def test_create_test_run() -> None:
    run = create_test_run("q", "a", {"topic": "math"})
    assert run["input"] == [{"role": "user", "content": "q"}]
    assert get_user_message_from_run_input(run["input"]) == "q"
    assert get_assistant_message_from_run_output(run["output"]) == "a"
    assert run["additional_context"] == {"topic": "math"}
    assert run["request_context"] == {}
