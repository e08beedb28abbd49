"""From a selected span and the spans under it to the run the scorers read.

The run has the shape of the reference system's trace runs: an agent run input
(`inputMessages` = the current user turn, `rememberedMessages` = the conversation the first
model call was given, `systemMessages`) and an output of one assistant agent message whose
`tool-invocation` parts and `toolInvocations` list hold the tool calls in order, followed by the
answer's text part. Tool calls come from the tool-execution spans under an agent span (in start
order), else from the model messages of the turn. Scorers that read tool calls, trajectories or
tool results as context read this shape (docs/traces.md, "From a span to a run").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic_core import from_json, to_json

from ..core.call import AgentCall
from ..core.result import RESULT_RUN_FIELDS, ScorerRun
from .conventions import (
    agent_name,
    is_agent_span,
    read_output,
    read_rest,
    read_span,
    retrieved_documents,
    span_input,
    span_output,
    tool_call_of_span,
)
from .conversation import ConversationKeys, read_conversation
from .messages import JSON_OBJECT, Message, SpanContent, ToolCall, from_json_text
from .spans import SpanRecord

__all__ = ["ExtractedRun", "SkipReason", "Skipped", "SpanTree", "extract_run"]

SkipReason = Literal["no_content", "no_output"]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A selected span that is not scored, and why (`no_content`: content capture was off, or
    the span carries no messages in any known convention, whatever tool calls it made;
    `no_output`: an input but nothing came out, e.g. a failed call)."""

    trace_id: str
    span_id: str
    reason: SkipReason


@dataclass(frozen=True, slots=True)
class ExtractedRun:
    """One span's run: what `Scorer.run` takes, plus where it came from."""

    trace_id: str
    span_id: str
    span_name: str
    convention: str
    input: dict[str, Any]
    output: list[dict[str, Any]]
    tool_calls: list[str] = field(default_factory=list)
    agent: str | None = None
    entity_type: str | None = None
    service_name: str | None = None
    start_ns: int = 0
    conversation_id: str | None = None
    ends_conversation: bool = False
    # A scored conversation's facts (`sessions.Session.to_run`): kept in its rows' metadata.
    session: dict[str, Any] | None = None

    def to_call(self, *, plain: bool = False, metadata: dict[str, Any] | None = None) -> AgentCall:
        """The agent call this span records: a `trace` call named after its agent (else its
        service), its own span id as the call's run id (the row's `metadata.agentRunId`).
        `plain`: with the run's plain JSON copy of its content (`plain_content`, what serve
        queues) instead of its own, which the call is marked as (`AgentCall.plain_json`);
        `metadata`: instead of `metadata()`."""
        run_input, run_output = self.plain_content() if plain else (self.input, self.output)
        make = AgentCall.of_plain_json if plain else AgentCall
        return make(
            input=run_input,
            output=run_output,
            target=self.agent or self.service_name,
            trace_id=self.trace_id,
            span_id=self.span_id,
            run_id=self.span_id,
            metadata=self.metadata() if metadata is None else metadata,
            score_source="trace",
            entity_type=self.entity_type,
            conversation_id=self.conversation_id,
        )

    def plain_content(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(input, output) as plain JSON values: what `from_json(to_json(...))` of them gives,
        each message's `createdAt` as its ISO text (serve queues runs in this form).

        Only the input mapping and the messages are new: the values under a message and the
        input's other entries are the run's own. Extraction builds them of JSON values only
        (decoded JSON, attribute values, texts), which read back as themselves, so they are
        not copied: a quarter of a run's reading was that copy. A message of another shape is
        copied through JSON, as before."""
        run_input = dict(self.input)
        for key in _MESSAGE_LISTS:
            messages = run_input.get(key)
            if messages is not None:
                run_input[key] = _plain_messages(messages)
        return run_input, _plain_messages(self.output)

    def encoded_size(self) -> int:
        """Bytes of `[input, output]` as JSON (`pydantic_core.to_json`): what serve's queue
        counts for the run's item and the session buffer for a turn (one encoding per run
        when it is both)."""
        return len(to_json([self.input, self.output]))

    def scorer_run(self) -> ScorerRun:
        """The run for `Scorer.run`, with the reference's trace fields set."""
        return ScorerRun.of_call(self.to_call())

    def metadata(self) -> dict[str, Any]:
        """Where the run came from, as its rows' metadata keep it: the span's name, the
        convention it was read in, its service, and its type in the reference's span vocabulary
        (`agent_run` for an agent span, `model_generation` for a model call), which is the
        `entityType` of its score rows."""
        span_type = "agent_run" if self.entity_type == "agent" else "model_generation"
        metadata: dict[str, Any] = {
            "spanName": self.span_name,
            "spanType": "session" if self.session is not None else span_type,
            "convention": self.convention,
        }
        if self.service_name is not None:
            metadata["serviceName"] = self.service_name
        if self.session is not None:
            metadata["session"] = self.session
        return metadata

    def run_fields(self) -> dict[str, Any]:
        """Every field of its scorer run but `output`."""
        run = self.scorer_run()
        return {name: getattr(run, name) for name in RESULT_RUN_FIELDS if name != "output"}


# The input's entries that hold messages; the output is a list of them.
_MESSAGE_LISTS: Final = ("inputMessages", "rememberedMessages")


def _plain_messages(messages: Any) -> Any:
    if type(messages) is not list:
        return from_json(to_json(messages))
    plain = []
    for message in messages:
        created = message.get("createdAt") if type(message) is dict else None
        if type(created) is datetime:
            plain.append({**message, "createdAt": from_json(to_json(created))})
        else:
            plain.append(from_json(to_json(message)))
    return plain


class SpanTree:
    """The spans of one trace (a `ReadySpan.trace`) as a tree: built once per trace, however
    many of its spans are read as runs (a trace of many selected model calls would otherwise
    cost its size per run)."""

    __slots__ = ("by_id", "children")

    def __init__(self, spans: Iterable[SpanRecord]) -> None:
        self.children: dict[str, list[SpanRecord]] = {}
        self.by_id: dict[str, SpanRecord] = {}
        for span in spans:
            self.by_id[span.span_id] = span
            if span.parent_span_id is not None:
                self.children.setdefault(span.parent_span_id, []).append(span)
        for siblings in self.children.values():
            siblings.sort(key=_start_end)

    def descendants(self, span: SpanRecord) -> list[SpanRecord]:
        """Depth-first in start order, not entering nested agents (they are runs of their own)."""
        found: list[SpanRecord] = []
        children = self.children
        stack = children.get(span.span_id)
        if not stack:
            return found
        stack = stack[::-1]
        while stack:
            current = stack.pop()
            found.append(current)
            below = children.get(current.span_id)
            if below and not is_agent_span(current):
                stack.extend(reversed(below))
        return found

    def ancestors(self, span: SpanRecord) -> list[SpanRecord]:
        """The span's parent, its parent's, ... as far as they arrived (a cycle ends it)."""
        found: list[SpanRecord] = []
        parent_id = span.parent_span_id
        if parent_id is None:
            return found
        by_id = self.by_id
        seen = {span.span_id}
        parent = by_id.get(parent_id)
        while parent is not None and parent.span_id not in seen:
            seen.add(parent.span_id)
            found.append(parent)
            parent = by_id.get(parent.parent_span_id or "")
        return found


def _start_end(span: SpanRecord) -> tuple[int, int]:
    return (span.start_ns, span.end_ns)


def _agent_message(message_id: str, role: str, text: str, created: datetime) -> dict[str, Any]:
    return {
        "id": message_id,
        "role": role,
        "content": {"format": 2, "parts": [{"type": "text", "text": text}], "content": text},
        "createdAt": created,
    }


def _invocation(call: ToolCall, fallback_id: str) -> dict[str, Any]:
    arguments = call.arguments
    return {
        "toolCallId": call.id or fallback_id,
        "toolName": call.name,
        # The reference's tool id is the tool's own id; a trace names a tool only once.
        "toolId": call.name,
        "args": dict(arguments)
        if isinstance(arguments, JSON_OBJECT)
        else ({} if arguments is None else {"value": arguments}),
        "result": call.result if call.has_result else None,
        "state": "result" if call.has_result else "call",
    }


def _turn_tool_calls(inputs: Sequence[Message], outputs: Sequence[Message]) -> list[ToolCall]:
    """Tool calls of the current turn: those after the last user message, results matched by id."""
    last_user = max((i for i, m in enumerate(inputs) if m.role == "user"), default=-1)
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    for message in [*inputs[last_user + 1 :], *outputs]:
        for call in message.tool_calls:
            calls.append(call)
            if call.id:
                by_id[call.id] = call
        if message.role == "tool" and message.tool_call_id in by_id:
            found = by_id[message.tool_call_id]
            found.result, found.has_result = from_json_text(message.text), True
    return calls


def _at(nanoseconds: int) -> datetime:
    return datetime.fromtimestamp(nanoseconds / 1e9, UTC)


def _created(span: SpanRecord) -> datetime:
    return _at(span.end_ns or span.start_ns)


def _remembered(
    current_text: str,
    before_current: Sequence[Message],
    model_spans: Iterable[tuple[SpanRecord, SpanContent]],
    started: datetime,
) -> tuple[list[tuple[str, str]], datetime]:
    """(role, text) of the conversation before the current turn, and when it was sent.

    As the reference reads a trace: the first model call's input but its system messages and
    any message with the current input's text, at that call's start; a tool message or a tool
    call has no text of its own there (its text here is the tool's result). Without a model call
    with an input, the agent's own user and assistant messages before the current one."""
    for model_span, content in model_spans:
        if content.input:
            return [
                (m.role, "" if m.role == "tool" else m.text)
                for m in content.input
                if m.role != "system" and m.text != current_text
            ], _at(model_span.start_ns or model_span.end_ns)
    return [
        (m.role, m.text) for m in before_current if m.role in ("user", "assistant") and m.text
    ], started


_DEFAULT_KEYS: Final = ConversationKeys()


def extract_run(
    span: SpanRecord,
    trace: Iterable[SpanRecord] | SpanTree,
    keys: ConversationKeys | None = None,
) -> ExtractedRun | Skipped:
    """The run of `span`, read with the other spans of its trace (`trace` may include it; a
    `SpanTree` of them when several spans of one trace are read); `keys` say which attributes
    name its conversation (`conversation`)."""
    tree = trace if isinstance(trace, SpanTree) else SpanTree(trace)
    agent = is_agent_span(span)
    below = tree.descendants(span) if agent else []
    conversation_id, ends = read_conversation(
        (s.attributes for s in [span, *below, *tree.ancestors(span)]), keys or _DEFAULT_KEYS
    )
    own = read_span(span)
    # Each span below is read once, in one pass: as a tool call, else as a model call's
    # messages. A model call whose output alone says it is one (`span_output`) has the rest
    # read only when asked for (`model`): the first call's input and system, the last's input
    # when no tool span gives the calls, the remembered conversation's. The first call is
    # read input first (`span_input`): its output is read only when it is the last call too.
    calls: list[ToolCall] = []
    model_spans: list[tuple[SpanRecord, SpanContent]] = []
    unread: set[int] = set()
    first_output_unread = False
    for below_span in below:
        call = tool_call_of_span(below_span)
        if call is not None:
            calls.append(call)
        elif not model_spans and (content := span_input(below_span)) is not None:
            first_output_unread = True
            model_spans.append((below_span, content))
        elif (content := span_output(below_span)) is not None:
            unread.add(len(model_spans))
            model_spans.append((below_span, content))
        elif (content := read_span(below_span)) is not None:
            model_spans.append((below_span, content))
    if first_output_unread and len(model_spans) == 1:  # the first call is the last
        model_spans[0] = (model_spans[0][0], read_output(*model_spans[0]))

    def model(index: int) -> SpanContent:
        model_span, content = model_spans[index]
        if index in unread:
            unread.discard(index)
            content = read_rest(model_span, content)
            model_spans[index] = (model_span, content)
        return content

    first = model(0) if model_spans else None
    last = model_spans[-1][1] if model_spans else None  # its output only, until `model`
    inputs = _pick(own, first, "input")
    outputs = _pick(own, last, "output")
    system = (own.system if own is not None else []) or (first.system if first else [])
    if not calls:
        last = model(len(model_spans) - 1) if model_spans else None
        turn_inputs = (last.input if last is not None and last.input else None) or inputs
        calls = _turn_tool_calls(turn_inputs, outputs)
    answer = ""
    for message in reversed(outputs):  # loops, not generators: this runs for every run read
        if message.role == "assistant" and message.text:
            answer = message.text
            break
    asked = False
    for message in inputs:
        if not message.empty:
            asked = True
            break
    # Tool calls alone are no run: with content capture off, an agent's tool spans are still
    # exported, and scorers would grade an empty conversation.
    if not answer.strip() and not (calls and asked):
        reason: SkipReason = "no_output" if asked else "no_content"
        return Skipped(trace_id=span.trace_id, span_id=span.span_id, reason=reason)
    created, started = _created(span), _at(span.start_ns or span.end_ns)
    last_user = len(inputs) - 1
    while last_user >= 0 and inputs[last_user].role != "user":
        last_user -= 1
    current = [inputs[last_user]] if last_user >= 0 else []
    remembered, remembered_at = _remembered(
        current[0].text if current else "",
        inputs[: max(last_user, 0)],
        ((model_spans[i][0], model(i)) for i in range(len(model_spans))),
        started,
    )
    run_input: dict[str, Any] = {
        "inputMessages": [_agent_message("", m.role, m.text, started) for m in current],
        "rememberedMessages": [
            _agent_message("", role, text, remembered_at) for role, text in remembered
        ],
        "systemMessages": [{"role": "system", "content": text} for text in system],
        "taggedSystemMessages": {},
    }
    documents = retrieved_documents(below)
    if documents:
        run_input["context"] = documents
    invocations = [_invocation(c, f"{span.span_id}-{i}") for i, c in enumerate(calls)]
    parts: list[dict[str, Any]] = [
        {"type": "tool-invocation", "toolInvocation": inv} for inv in invocations
    ]
    if answer.strip():
        parts.append({"type": "text", "text": answer})
    output = [
        {
            "id": "",
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": parts,
                "content": answer,
                "toolInvocations": invocations,
            },
            "createdAt": created,
        }
    ]
    conventions = {content.convention for _, content in model_spans}
    if own is not None:
        conventions.add(own.convention)
    return ExtractedRun(
        trace_id=span.trace_id,
        span_id=span.span_id,
        span_name=span.name,
        convention=",".join(sorted(conventions)) or "tool_spans",
        input=run_input,
        output=output,
        tool_calls=[call.name for call in calls],
        agent=agent_name(span),
        entity_type="agent" if agent else None,
        service_name=span.service_name,
        start_ns=span.start_ns,
        conversation_id=conversation_id,
        ends_conversation=ends,
    )


def _pick(
    own: SpanContent | None, child: SpanContent | None, side: Literal["input", "output"]
) -> list[Message]:
    for content in (own, child):
        messages = getattr(content, side) if content is not None else None
        if messages:
            return list(messages)
    return []
