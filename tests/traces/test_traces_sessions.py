"""Conversations scored as sessions: the buffer's closing rules (idle time, turn limit, the
agent's end marker) on a controllable clock, turn order, and its bounds under a flood."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from scorewatch.traces import (
    ExtractedRun,
    SessionBuffer,
    SessionLimits,
)

pytestmark = pytest.mark.unit


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def turn(conversation: str, number: int, *, end: bool = False, text: str = "") -> ExtractedRun:
    """A run as extraction makes it, naming its conversation; started at `number` ns."""
    message = {"role": "assistant", "content": {"content": text or f"{conversation} {number}"}}
    return ExtractedRun(
        trace_id=f"{number:032x}",
        span_id=f"{number:016x}",
        span_name="invoke_agent shop-agent",
        convention="genai",
        input={"inputMessages": [{"role": "user", "content": f"q{number}"}]},
        output=[message],
        tool_calls=[f"step_{number}"],
        agent="shop-agent",
        service_name="shop",
        start_ns=number,
        conversation_id=conversation,
        ends_conversation=end,
    )


def test_an_idle_session_closes_after_idle_s_and_not_before() -> None:
    clock = Clock()
    buffer = SessionBuffer(SessionLimits(idle_s=10), clock=clock)
    buffer.add(turn("a", 1))
    clock.now = 9
    buffer.add(turn("a", 2))
    clock.now = 18.9  # 9.9 s since the last turn
    assert buffer.pop_closed() == [] and len(buffer) == 1
    clock.now = 19
    (session,) = buffer.pop_closed()
    assert session.session is not None
    assert session.session["turns"] == 2 and session.session["closed"] == "idle"
    assert buffer.counts.closed == {"idle": 1} and len(buffer) == 0 and buffer.bytes_held == 0


def test_the_turn_limit_closes_a_session_and_the_next_turn_begins_another() -> None:
    buffer = SessionBuffer(SessionLimits(max_turns=2), clock=Clock())
    for number in (1, 2, 3):
        buffer.add(turn("a", number))
    (first,) = buffer.pop_closed()
    assert first.session is not None and first.session["closed"] == "max_turns"
    assert first.session["turns"] == 2 and len(buffer) == 1
    (rest,) = buffer.pop_closed(flush=True)
    assert rest.session is not None and rest.session["turns"] == 1
    assert buffer.counts.closed == {"max_turns": 1, "flush": 1} and buffer.counts.opened == 2


def test_the_agents_end_marker_closes_its_session_at_once() -> None:
    buffer = SessionBuffer(SessionLimits(idle_s=1000), clock=Clock())
    buffer.add(turn("a", 1))
    buffer.add(turn("b", 2))
    buffer.add(turn("a", 3, end=True))
    (ended,) = buffer.pop_closed()  # no time passed: only the marked conversation closes
    assert ended.conversation_id == "a" and ended.ends_conversation
    assert ended.session is not None and ended.session["closed"] == "end"
    assert ended.session["firstTraceId"] == f"{1:032x}"
    assert ended.session["lastTraceId"] == f"{3:032x}"
    assert buffer.counts.closed == {"end": 1} and len(buffer) == 1


def test_turns_arriving_out_of_order_are_scored_in_start_order() -> None:
    buffer = SessionBuffer(SessionLimits(), clock=Clock())
    for number in (3, 1, 2):
        buffer.add(turn("a", number))
    (session,) = buffer.pop_closed(flush=True)
    assert [m["content"]["content"] for m in session.output] == ["a 1", "a 2", "a 3"]
    assert session.tool_calls == ["step_1", "step_2", "step_3"]
    assert [m["content"] for m in session.input["inputMessages"]] == ["q1", "q2", "q3"]
    assert session.to_call().conversation_id == "a"


def test_a_flood_of_never_ending_sessions_stays_within_its_bounds_and_is_counted() -> None:
    clock = Clock()
    limits = SessionLimits(idle_s=3600, max_sessions=50, max_bytes=20_000)
    buffer = SessionBuffer(limits, clock=clock)
    closed: list[ExtractedRun] = []
    peak_sessions = peak_bytes = 0
    for number in range(1, 5001):
        clock.now = number / 1000  # never idle: every conversation is still "going on"
        buffer.add(turn(f"flood-{number % 400}", number, text="x" * (number % 97)))
        peak_sessions = max(peak_sessions, len(buffer))
        peak_bytes = max(peak_bytes, buffer.bytes_held)
        closed.extend(buffer.pop_closed())
    assert peak_sessions <= 50 and peak_bytes <= 20_000
    counts = buffer.counts
    early = counts.closed["max_sessions"] + counts.closed["max_bytes"]
    assert early == len(closed) and early > 4000
    assert buffer.add(turn("huge", 9999, text="y" * 30_000)) is False
    assert counts.turns_dropped == {"too_large": 1}
    # Every turn kept is in exactly one session, closed early or still open.
    still_open = buffer.pop_closed(flush=True)
    kept = sum(s.session["turns"] for s in [*closed, *still_open] if s.session)
    assert kept == counts.turns - 1
    assert counts.outcomes()["turns_dropped_too_large"] == 1


def test_a_conversation_id_that_is_not_a_short_text_names_none() -> None:
    from scorewatch.traces import ConversationKeys
    from scorewatch.traces.conversation import read_conversation

    keys = ConversationKeys()
    assert read_conversation([{"gen_ai.conversation.id": "x" * 257}], keys) == (None, False)
    assert read_conversation([{"session.id": 42}], keys) == ("42", False)
    assert read_conversation(
        [{"other": 1}, {"gen_ai.conversation.id": "c", "scorewatch.conversation.end": "true"}],
        keys,
    ) == ("c", True)


def test_a_turn_counts_its_encoded_size_given_or_not() -> None:
    # serve's intake hands `add` the size its queue item counted (`encoded_size`): the same
    # bytes as `add` finds by encoding the run itself, and the same bound applies.
    from pydantic_core import to_json

    given, found = SessionBuffer(clock=Clock()), SessionBuffer(clock=Clock())
    runs = [turn("a", 1), turn("a", 2, text="é" * 900), turn("b", 3)]
    for run in runs:
        size = run.encoded_size()
        assert size == len(to_json([run.input, run.output]))
        assert given.add(run, size) and found.add(run)
    assert given.bytes_held == found.bytes_held == sum(r.encoded_size() for r in runs)
    small = SessionBuffer(SessionLimits(max_bytes=runs[1].encoded_size() - 1), clock=Clock())
    assert not small.add(runs[1], runs[1].encoded_size())
    assert small.counts.turns_dropped == {"too_large": 1}
