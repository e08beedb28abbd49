"""What a run's telemetry exports under a privacy policy is what its row keeps: the chat spans'
messages, the run span's content and the evaluation event carry the row's redacted texts
(written as JSON after redaction, never redacted as JSON text, whose escapes hide a value
after a line break from the recognisers), so a value has one marker everywhere in the run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scorewatch as sw
from privacy_support import API_KEY, CARD, EMAIL, IBAN, IP, PHONE
from scorewatch.core.call import AgentCall
from scorewatch.core.events import Observers, observed_by
from scorewatch.live.engine import score_call
from scorewatch.privacy import PrivacyPolicy
from scorewatch.telemetry.in_memory import InMemoryTelemetry, in_memory_telemetry
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.integration

POLICY = PrivacyPolicy(redact=["all"])
VALUES = (EMAIL, PHONE, CARD, IBAN, IP, API_KEY)
# Characters JSON escapes (and plain ones), before and after a value.
EDGES = ("\n", "\t", "\r", '"', "\\", "\x01", " ", "")


def _scorer(reply: str) -> sw.Scorer:
    judge = ScriptedJudge(
        lambda request: '{"claims": ["a"]}' if request.step == "analyze" else reply
    )
    schema = {"type": "object", "properties": {"claims": {"type": "array"}}}
    return (
        sw.create_scorer(
            id="private",
            description="privacy",
            judge=sw.JudgeConfig(model=judge, instructions="Judge it."),
        )
        .analyze(
            sw.PromptStep(
                "claims", lambda ctx: f"Claims in:\n{ctx.run.input}", output_schema=schema
            )
        )
        .generate_score(lambda ctx: 1.0)
        .generate_reason(sw.PromptStep("explain", lambda ctx: f"Explain\n{ctx.score}"))
    )


def _scored(given_input: Any, reply: str) -> tuple[dict[str, Any], InMemoryTelemetry]:
    bus = Observers()
    call = AgentCall(input=given_input, output=reply, target="bot")
    with in_memory_telemetry(capture_content=True, observers=bus) as otel, observed_by(bus):
        record = asyncio.run(score_call(_scorer(reply), call, "run-1", POLICY))
    assert record.status == "success"
    return record.to_row(), otel


def _content(messages: Any) -> str:
    (message,) = json.loads(messages)
    (part,) = message["parts"]
    return str(part["content"])


def _exported_is_the_rows(row: dict[str, Any], otel: InMemoryTelemetry) -> None:
    chats = otel.spans_named("chat scripted-judge")
    assert [span.attributes["scorewatch.step"] for span in chats] == [  # type: ignore[index]
        "analyze",
        "generate_reason",
    ]
    analyze, reason = (span.attributes or {} for span in chats)
    assert _content(analyze["gen_ai.input.messages"]) == row["analyzePrompt"]
    assert _content(reason["gen_ai.input.messages"]) == row["reasonPrompt"]
    assert _content(reason["gen_ai.output.messages"]) == row["reason"]
    run = otel.span("evaluation private").attributes or {}
    given_input = run["scorewatch.input"]
    assert isinstance(given_input, str)
    if isinstance(row["input"], str):
        assert given_input == row["input"]
    else:
        assert json.loads(given_input) == row["input"]
    assert run["scorewatch.output"] == row["output"] == run["scorewatch.reason"]
    (event,) = otel.evaluation_events()
    assert event["gen_ai.evaluation.explanation"] == row["reason"]


def _leaks(row: dict[str, Any], otel: InMemoryTelemetry) -> list[str]:
    exported = [json.dumps(row)]
    for span in otel.spans():
        for value in (span.attributes or {}).values():
            if isinstance(value, str):
                # The attribute as text, and its JSON read back (what a reader of it sees).
                exported.append(value)
                if value.startswith("[") or value.startswith("{"):
                    exported.append(json.dumps(json.loads(value)))
    exported += [json.dumps(event) for event in otel.evaluation_events()]
    return [value for value in VALUES for text in exported if value in text]


def test_a_value_after_a_line_break_is_redacted_in_the_chat_spans_as_in_the_row() -> None:
    # As JSON text, the prompt reads `:\\nDE89 ...`: no IBAN starts at `nDE89`. The row's
    # prompt, and the span's, are redacted before they are written as JSON.
    text = f"Refund to:\n{IBAN}\nmail:\n{EMAIL}\ncall\n{PHONE} key:\n{API_KEY}"
    row, otel = _scored(text, f"Quoted:\n{IBAN}\n{EMAIL}")
    assert _leaks(row, otel) == []
    _exported_is_the_rows(row, otel)
    analyze = otel.spans_named("chat scripted-judge")[0].attributes or {}
    prompt = _content(analyze["gen_ai.input.messages"])
    redacted = "Refund to:\n<IBAN_1>\nmail:\n<EMAIL_1>\ncall\n<PHONE_1> key:\n<SECRET_1>"
    assert prompt == "Claims in:\n" + redacted


def test_structured_content_is_redacted_text_by_text_then_written_as_json() -> None:
    given_input = {"messages": [{"role": "user", "content": f"Card:\n{CARD}\tfrom\n{IP}"}]}
    row, otel = _scored(given_input, f"Seen:\t{CARD}")
    # (The prompt writes the input's repr, `Card:\\n4111 ...`: the row's prompt keeps that
    # card, as a value after an escape is read in any text; the exports keep no more.)
    assert set(_leaks(row, otel)) <= {value for value in VALUES if value in json.dumps(row)}
    _exported_is_the_rows(row, otel)
    run = otel.span("evaluation private").attributes or {}
    assert json.loads(str(run["scorewatch.input"])) == {
        "messages": [{"role": "user", "content": "Card:\n<CARD_1>\tfrom\n<IP_1>"}]
    }


@settings(max_examples=40, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.sampled_from(EDGES), st.sampled_from(VALUES), st.sampled_from(EDGES)),
        min_size=1,
        max_size=4,
    ),
    quoted=st.lists(st.tuples(st.sampled_from(EDGES), st.sampled_from(VALUES)), max_size=3),
    structured=st.booleans(),
)
def test_every_exported_content_is_the_rows_redacted_text(
    pieces: list[tuple[str, str, str]], quoted: list[tuple[str, str]], structured: bool
) -> None:
    text = "Hi" + "".join(f"{before}{value}{after}x" for before, value, after in pieces)
    reply = "Said" + "".join(f"{before}{value}" for before, value in quoted)
    given_input: Any = {"messages": [{"content": text}]} if structured else text
    row, otel = _scored(given_input, reply)
    _exported_is_the_rows(row, otel)
    # Whatever the row keeps of a value (an edge the recognisers do not read as one), the
    # exports keep no more of it.
    kept_by_row = {value for value in VALUES if value in json.dumps(row)}
    assert set(_leaks(row, otel)) <= kept_by_row
