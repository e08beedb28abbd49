"""Which spans are runs to score: the `[[traces.select]]` tables of the configuration.

A selector matches a span when every condition it sets holds; a span is selected when any
selector matches. With no selectors, `conventions.DEFAULT_SELECTORS` apply: agent invocations
and model calls in each convention this package reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .spans import SpanRecord

__all__ = ["SpanSelector", "matching_selector", "selector_matcher"]

Scalar = str | bool | int | float


class SpanSelector(BaseModel):
    """One `[[traces.select]]` table.

    `operation`: values of `gen_ai.operation.name` (`invoke_agent`, `chat`, ...);
    `service`: values of the resource's `service.name`; `name`: a regular expression the whole
    span name must match; `attributes`: attribute values the span must have (equality; a list
    attribute matches when it contains the value). `nested = false` (the default) skips a match
    when one of its ancestors in the trace is selected too, so an agent and the model calls it
    makes are not all scored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    operation: list[str] | None = None
    service: list[str] | None = None
    name: str | None = None
    attributes: dict[str, Scalar] = Field(default_factory=dict)
    nested: bool = False

    @field_validator("name")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"name is not a valid regular expression: {error}") from None
        return value

    @cached_property
    def _pattern(self) -> re.Pattern[str] | None:
        return re.compile(self.name) if self.name is not None else None

    def matches(self, span: SpanRecord) -> bool:
        return selector_matcher((self,))(span) is not None


def _equal(value: Any, want: Scalar) -> bool:
    if value is None:  # the common case: the span has no such attribute (want is never None)
        return False
    if isinstance(value, tuple | list):  # an array attribute (a tuple), or a list built by hand
        return any(_equal(item, want) for item in value)
    if isinstance(value, bool) or isinstance(want, bool):
        # bool is an int in Python: keep `true` from matching 1.
        return type(value) is type(want) and value == want
    return bool(value == want)


def matching_selector(
    span: SpanRecord,
    selectors: Sequence[SpanSelector],
) -> SpanSelector | None:
    """The first selector that matches the span, or None."""
    return selector_matcher(selectors)(span)


def selector_matcher(
    selectors: Sequence[SpanSelector],
) -> Callable[[SpanRecord], SpanSelector | None]:
    """`matching_selector` over fixed selectors, their conditions read once: what the trace
    buffer asks of every span it keeps (a span no selector matches is asked of every one)."""
    compiled = tuple(
        (
            tuple(selector.operation) if selector.operation is not None else None,
            tuple(selector.service) if selector.service is not None else None,
            selector._pattern,
            tuple(selector.attributes.items()),
            selector,
        )
        for selector in selectors
    )

    def match(span: SpanRecord) -> SpanSelector | None:
        attributes = span.attributes
        for operation, service, pattern, wanted, selector in compiled:
            if operation is not None and attributes.get("gen_ai.operation.name") not in operation:
                continue
            if service is not None and span.service_name not in service:
                continue
            if pattern is not None and pattern.fullmatch(span.name) is None:
                continue
            for key, want in wanted:
                value = attributes.get(key)
                # Without the attribute (the common case), no call of `_equal`.
                if value is None or not _equal(value, want):
                    break
            else:
                return selector
        return None

    return match
