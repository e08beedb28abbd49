"""The trace conventions this package reads, and the questions a span answers through them.

Each convention is one `Convention` record in a module of its own (`gen_ai`, `openinference`,
`openllmetry`); `CONVENTIONS` lists them in the order they are tried, and everything below
reads spans only through them. A new convention is a new record added to `CONVENTIONS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ..messages import SpanContent, ToolCall
from ..select import SpanSelector
from ..spans import SpanRecord
from ._flattened import REDACTED
from ._record import Convention, Documents, Marker, PartialReading, ToolSpans, indexed
from .gen_ai import GEN_AI
from .openinference import OPENINFERENCE
from .openllmetry import OPENLLMETRY

__all__ = [
    "CONVENTIONS",
    "DEFAULT_SELECTORS",
    "REDACTED",
    "Convention",
    "Documents",
    "Marker",
    "ToolSpans",
    "agent_name",
    "indexed",
    "is_agent_span",
    "read_output",
    "read_rest",
    "read_span",
    "retrieved_documents",
    "span_input",
    "span_output",
    "tool_call_of_span",
]

# The first convention that reads anything from a span wins.
CONVENTIONS: Final[tuple[Convention, ...]] = (GEN_AI, OPENINFERENCE, OPENLLMETRY)

# Without `[[traces.select]]`: agent invocations and model calls in every convention.
DEFAULT_SELECTORS: Final[tuple[SpanSelector, ...]] = tuple(
    selector for convention in CONVENTIONS for selector in convention.selects
)


def read_span(span: SpanRecord) -> SpanContent | None:
    """The span's messages in the first convention that has any; None when none does."""
    for convention in CONVENTIONS:
        content = convention.read(span)
        if content is not None and content.has_any:
            return content
    return None


# Only the first convention's reading of one side stands for `read_span`: a later convention
# is read only when the ones before it find nothing.
_PARTIAL: Final[PartialReading | None] = CONVENTIONS[0].partial


def span_output(span: SpanRecord) -> SpanContent | None:
    """The span's content with only its output read, when the first convention reads an
    output from the span alone: `read_span(span)` is then `read_rest(span, content)`, which
    reads the rest. None when it does not (ask `read_span`). Its input is None and its system
    empty until read: a run asks for the input of its first and last model calls only."""
    if _PARTIAL is None:
        return None
    output = _PARTIAL.output(span)
    return None if output is None else SpanContent(_PARTIAL.convention, output=output)


def read_rest(span: SpanRecord, partial: SpanContent) -> SpanContent:
    """`read_span(span)`, for a span whose output `span_output` read (`partial`)."""
    if _PARTIAL is None or partial.output is None:  # never: `span_output` read one
        raise ValueError("no output read alone")
    return _PARTIAL.rest(span, partial.output)


def span_input(span: SpanRecord) -> SpanContent | None:
    """The span's content with only its input and system read (its output None), when the
    first convention reads them from the span alone and they make it a model call:
    `read_span(span)` is then `read_output(span, content)`. None when it does not (ask
    `span_output`, then `read_span`). A run needs only the first model call's input, and its
    output only when it is the last call as well."""
    return None if _PARTIAL is None else _PARTIAL.input(span)


def read_output(span: SpanRecord, partial: SpanContent) -> SpanContent:
    """`read_span(span)`, for a span whose input and system `span_input` read (`partial`)."""
    if _PARTIAL is None:  # never: `span_input` read them
        raise ValueError("no input read alone")
    return SpanContent(partial.convention, partial.input, _PARTIAL.output(span), partial.system)


# The markers as (attribute, values, ...) read inline: asked of every span of every run read.
_TOOL_MARKERS: Final = tuple(
    (c.tool_spans.marker.attribute, c.tool_spans.marker.values, c.tool_spans) for c in CONVENTIONS
)
_AGENT_MARKERS: Final = tuple((c.agent.attribute, c.agent.values) for c in CONVENTIONS)


def tool_call_of_span(span: SpanRecord) -> ToolCall | None:
    """The tool call a tool-execution span records, in any convention; None for other spans."""
    attributes = span.attributes
    for attribute, values, tool_spans in _TOOL_MARKERS:
        if attributes.get(attribute) in values:
            return tool_spans.call_of(span)
    return None


def is_agent_span(span: SpanRecord) -> bool:
    """Whether any convention marks the span as an agent's."""
    attributes = span.attributes
    for attribute, values in _AGENT_MARKERS:  # noqa: SIM110 - a loop: no generator per span
        if attributes.get(attribute) in values:
            return True
    return False


def agent_name(span: SpanRecord) -> str | None:
    """The agent's name, from the first naming attribute the span has."""
    for convention in CONVENTIONS:
        for key in convention.agent_name:
            value = span.attributes.get(key)
            if isinstance(value, str) and value:
                return value
    return None


# The conventions' retriever markers, read inline: asked of every span under every agent read.
_DOCUMENTS: Final = tuple(
    (c.documents.marker.attribute, c.documents.marker.values, c.documents)
    for c in CONVENTIONS
    if c.documents is not None
)


def retrieved_documents(spans: Iterable[SpanRecord]) -> list[str]:
    """The texts of the documents the retriever spans among `spans` returned, in order."""
    texts: list[str] = []
    for span in spans:
        attributes = span.attributes
        for attribute, values, documents in _DOCUMENTS:
            if attributes.get(attribute) in values:
                texts.extend(documents.of(span))
    return texts
