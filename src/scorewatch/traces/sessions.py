"""Conversations: the turns of one conversation, from many traces, scored as one session.

A conversation with an agent is usually many traces, one per user message; each trace's run
(`ExtractedRun`) names its conversation when the agent's spans do (`conversation`). The
`SessionBuffer` groups those runs by (service, conversation id) and closes a session when it
has been idle for `idle_s`, when it reaches `max_turns`, or when a turn marks the end; a closed
session becomes one run (`to_run`) whose input holds every turn's user message and whose output
is every turn's assistant message in start order, tool invocations included: the shape the
multi-turn judge and the trajectory scorers read for a conversation (`run_evals` gives them the
same for a multi-turn item).

Bounds: at most `max_sessions` open sessions and `max_bytes` of turns in all (a turn's size is
its run's JSON). A new session past `max_sessions` closes the least recently active one early,
and a turn past `max_bytes` closes the least recently active ones until it fits: a session
closed early is still scored, with what it holds, and counted by reason; a turn larger than
`max_bytes` on its own is dropped and counted. Nothing is let go without a count.

Time comes from the injected clock: serve's intake uses the monotonic clock (idle = no turn
arrived); the batch reader uses the turns' own start times (idle = the gap between two turns).
Pure data structure, one thread at a time.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from .conversation import CONVERSATION_ATTRIBUTES, END_ATTRIBUTE, ConversationKeys
from .run import ExtractedRun

__all__ = ["EARLY", "CloseReason", "SessionBuffer", "SessionCounts", "SessionLimits"]

CloseReason = Literal["idle", "max_turns", "end", "flush", "max_sessions", "max_bytes"]
EARLY: Final[frozenset[str]] = frozenset({"max_sessions", "max_bytes"})
"""Reasons that close a session before the conversation is over (a bound)."""


class SessionLimits(BaseModel):
    """How turns are grouped into sessions, when a session closes, and the bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attributes: list[str] = Field(
        default_factory=lambda: list(CONVERSATION_ATTRIBUTES),
        min_length=1,
        description="Span attributes naming the conversation, the first found wins.",
    )
    end_attribute: str = Field(
        END_ATTRIBUTE,
        min_length=1,
        description="A span attribute that, true on any span of a turn, ends its conversation.",
    )
    idle_s: float = Field(300.0, gt=0, description="Seconds without a turn that close it.")
    max_turns: int = Field(100, ge=1, description="Turns that close a session.")
    max_sessions: int = Field(10_000, ge=1, description="Open sessions held at most.")
    max_bytes: int = Field(
        32 << 20, ge=1024, description="Bytes of turns (their runs' JSON) held at most."
    )

    @property
    def keys(self) -> ConversationKeys:
        return ConversationKeys(tuple(self.attributes), self.end_attribute)


@dataclass(slots=True)
class SessionCounts:
    """`turns`: runs with a conversation id received; `opened`: sessions opened; `closed`:
    sessions closed (and scored), by reason (`CloseReason`); `turns_dropped`: turns not kept,
    by reason (`too_large`: one turn over `max_bytes`)."""

    turns: int = 0
    opened: int = 0
    closed: Counter[str] = field(default_factory=Counter)
    turns_dropped: Counter[str] = field(default_factory=Counter)

    def outcomes(self) -> Counter[str]:
        """Every count by one name (`closed_idle`, `turns_dropped_too_large`, ...): what the
        metrics and serve's stats show."""
        found: Counter[str] = Counter()
        # Copied first (atomic under the GIL): metric collection reads from another thread.
        for reason, count in dict(self.closed).items():
            found[f"closed_{reason}"] = count
        for reason, count in dict(self.turns_dropped).items():
            found[f"turns_dropped_{reason}"] = count
        return found


@dataclass(slots=True)
class _Session:
    conversation_id: str
    last_arrival: float
    turns: list[tuple[ExtractedRun, int]] = field(default_factory=list)
    bytes: int = 0


class SessionBuffer:
    """Open sessions, bounded; `add` each turn, `pop_closed` the sessions to score."""

    def __init__(
        self, limits: SessionLimits | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits or SessionLimits()
        self.counts = SessionCounts()
        self._clock = clock
        # (service, conversation id) -> session, least recently active first.
        self._open: OrderedDict[tuple[str, str], _Session] = OrderedDict()
        self._closed: list[ExtractedRun] = []
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._open)

    @property
    def bytes_held(self) -> int:
        return self._bytes

    def add(self, run: ExtractedRun, size: int | None = None) -> bool:
        """Keep one turn (a run naming its conversation); False when it was dropped (counted).
        It may close its own session (the end marker, `max_turns`) or others (the bounds).
        `size`: the turn's `encoded_size()`, when the caller has it already (serve's intake counts
        the same size for the turn's own queue item)."""
        if run.conversation_id is None:
            raise ValueError("a turn names its conversation (conversation_id)")
        now = self._clock()
        limits = self.limits
        self.counts.turns += 1
        if size is None:
            size = run.encoded_size()
        if size > limits.max_bytes:
            self.counts.turns_dropped["too_large"] += 1
            return False
        key = (run.service_name or "", run.conversation_id)
        session = self._open.pop(key, None)
        if session is None:
            while len(self._open) >= limits.max_sessions:
                self._close(next(iter(self._open)), "max_sessions")
            session = _Session(run.conversation_id, now)
            self.counts.opened += 1
        while self._bytes + size > limits.max_bytes:
            if self._open:
                self._close(next(iter(self._open)), "max_bytes")
            else:  # only this session holds bytes: it is closed as it stands, and begins anew
                self._bytes -= session.bytes
                self._finish(session, "max_bytes")
                session = _Session(run.conversation_id, now)
                self.counts.opened += 1
        session.turns.append((run, size))
        session.bytes += size
        session.last_arrival = now
        self._bytes += size
        self._open[key] = session
        if run.ends_conversation:
            self._close(key, "end")
        elif len(session.turns) >= limits.max_turns:
            self._close(key, "max_turns")
        return True

    def pop_closed(self, *, flush: bool = False) -> list[ExtractedRun]:
        """The runs of the sessions closed since the last call, idle ones closed first; with
        `flush`, every open session too (the end of a batch, or shutdown)."""
        now = self._clock()
        # Least recently active first: the first one not idle ends the look, so a round costs
        # the sessions it closes, not the sessions held.
        while self._open:
            key, session = next(iter(self._open.items()))
            if flush:
                self._close(key, "flush")
            elif now - session.last_arrival >= self.limits.idle_s:
                self._close(key, "idle")
            else:
                break
        closed, self._closed = self._closed, []
        return closed

    def _close(self, key: tuple[str, str], reason: CloseReason) -> None:
        session = self._open.pop(key)
        self._bytes -= session.bytes
        self._finish(session, reason)

    def _finish(self, session: _Session, reason: CloseReason) -> None:
        self.counts.closed[reason] += 1
        if session.turns:
            self._closed.append(session_run([run for run, _ in session.turns], reason))


def session_run(turns: list[ExtractedRun], reason: str) -> ExtractedRun:
    """One run of a conversation's turns, in start order (arrival order among equal starts):
    every turn's user message as its input messages, every turn's assistant message (tool
    invocations included) as its output; the first turn's trace and span name the run, and
    its `session` facts name the conversation, the first and last trace and the turns."""
    ordered = sorted(turns, key=lambda run: run.start_ns)
    first, last = ordered[0], ordered[-1]
    run_input: dict[str, Any] = {
        "inputMessages": [m for run in ordered for m in run.input.get("inputMessages", [])],
        "rememberedMessages": list(first.input.get("rememberedMessages", [])),
        "systemMessages": list(first.input.get("systemMessages", [])),
        "taggedSystemMessages": {},
    }
    context = [d for run in ordered for d in run.input.get("context", [])]
    if context:
        run_input["context"] = context
    trace_ids = list(dict.fromkeys(run.trace_id for run in ordered))
    conventions = {part for run in ordered for part in run.convention.split(",") if part}
    # The first turn's span, agent and service name the session; the rest is the turns'.
    return replace(
        first,
        convention=",".join(sorted(conventions)),
        input=run_input,
        output=[message for run in ordered for message in run.output],
        tool_calls=[name for run in ordered for name in run.tool_calls],
        ends_conversation=reason == "end",
        session={
            "conversationId": first.conversation_id,
            "turns": len(ordered),
            "firstTraceId": first.trace_id,
            "lastTraceId": last.trace_id,
            "traceIds": trace_ids,
            "closed": reason,
        },
    )
