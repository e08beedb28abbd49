"""What a trace convention is: the one record that says how its spans are read.

Everything the package needs to know about a convention lives in its `Convention`: how to read a
span's messages, which spans are agents and what names them, which spans run tools, which spans
hold retrieved documents, and which spans are scored when no selector is configured. The
functions that read spans (`scorewatch.traces.conventions`) walk the records in order; none of
them names a convention.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..messages import Message, SpanContent, ToolCall, from_json_text
from ..select import SpanSelector
from ..spans import SpanRecord

__all__ = ["Convention", "Documents", "Marker", "PartialReading", "ToolSpans", "indexed"]


@dataclass(frozen=True, slots=True)
class Marker:
    """An attribute, and the values of it that mark a kind of span."""

    attribute: str
    values: tuple[str, ...]

    def on(self, span: SpanRecord) -> bool:
        return span.attributes.get(self.attribute) in self.values


@dataclass(frozen=True, slots=True)
class Documents:
    """Spans holding retrieved documents as `<prefix>.<i>.<text>` attributes."""

    marker: Marker
    prefix: str
    text: str

    def of(self, span: SpanRecord) -> list[str]:
        """The non-blank document texts of a span, in order; none when it is not marked."""
        if not self.marker.on(span):
            return []
        texts = (item.get(self.text) for item in indexed(span.attributes, self.prefix))
        return [text for text in texts if isinstance(text, str) and text.strip()]


@dataclass(frozen=True, slots=True)
class ToolSpans:
    """How a convention marks a tool-execution span and names the call's parts."""

    marker: Marker
    name: str
    call_id: str | None
    arguments: str
    result: str
    name_prefix: str = ""  # stripped from the span name when it stands in for the tool's name

    def call_of(self, span: SpanRecord) -> ToolCall:
        """The call the (marked) span records. The span's name and id stand in for a missing
        tool name and call id; a result attribute that is present (even empty) is the result."""
        attributes = span.attributes
        name = attributes.get(self.name)
        if not isinstance(name, str) or not name:
            stripped = span.name.removeprefix(self.name_prefix).strip() if self.name_prefix else ""
            name = stripped or span.name
        call_id = attributes.get(self.call_id) if self.call_id else None
        call = ToolCall(
            name=name,
            id=call_id if isinstance(call_id, str) and call_id else span.span_id,
            arguments=from_json_text(attributes.get(self.arguments)),
        )
        if self.result in attributes:
            call.result = from_json_text(attributes[self.result])
            call.has_result = True
        return call


@dataclass(frozen=True, slots=True)
class PartialReading:
    """A convention's reading of one side of a span alone, for a span whose other side may not
    be needed (a model call under an agent: a run reads the first call's input, the last
    call's output).

    `output(span)`: the output messages, non-empty, or None; when it gives some, `rest(span,
    output)` is exactly what the convention's `read` gives for the span (so an output read
    first must decide the reading: the content has an output, so it is this convention's),
    whose `SpanContent.convention` is `convention`. `input(span)`: the span's content with its
    input and system read and its output left None, or None; when it gives one, the input and
    system decide the reading as well, and the convention's `read` gives that content with
    `output(span)` as its output."""

    convention: str
    output: Callable[[SpanRecord], list[Message] | None]
    rest: Callable[[SpanRecord, list[Message]], SpanContent]
    input: Callable[[SpanRecord], SpanContent | None]


@dataclass(frozen=True, slots=True)
class Convention:
    """One trace convention, whole.

    `read`: the span's messages in this convention, or None; `agent`: what marks an agent span;
    `agent_name`: the attributes that may name the agent, first first; `tool_spans`: how its
    tool-execution spans look; `documents`: its retriever spans, if it has any; `selects`: the
    spans scored when no `[[traces.select]]` is configured (its agents and model calls);
    `partial`: its reading of one side of a span alone, if it has one.
    """

    name: str
    read: Callable[[SpanRecord], SpanContent | None]
    agent: Marker
    agent_name: tuple[str, ...]
    tool_spans: ToolSpans
    selects: tuple[SpanSelector, ...]
    documents: Documents | None = None
    partial: PartialReading | None = None


def indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.N.rest` attributes grouped by N (in N order), keyed by `rest`."""
    groups: dict[int, dict[str, Any]] = {}
    dotted = prefix + "."  # once, not per attribute: every reader scans every attribute
    start = len(dotted)
    for key, value in attributes.items():
        if not key.startswith(dotted):
            continue
        number, _, rest = key[start:].partition(".")
        if number.isdigit() and rest:
            # An array attribute is held as a tuple (`spans.attributes_of`): read as the list
            # it was, as `from_json_text` reads one.
            groups.setdefault(int(number), {})[rest] = (
                list(value) if type(value) is tuple else value
            )
    return [groups[number] for number in sorted(groups)]
