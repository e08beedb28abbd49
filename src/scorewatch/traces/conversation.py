"""Which conversation a run belongs to, and whether it ends it: read from its spans.

A turn of a conversation is one run (usually one trace per user message); the agent names the
conversation on its spans. The GenAI conventions' attribute is `gen_ai.conversation.id`,
OpenInference's `session.id`; other conventions are configured (`SessionLimits.attributes`).
The agent marks the last turn with `scorewatch.conversation.end = true` on any span of it
(`SessionLimits.end_attribute`). The run's own span is read first, then the spans under it in
start order, then its ancestors: an agent framework may set the id on the root of the trace
only, or on each model call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["CONVERSATION_ATTRIBUTES", "END_ATTRIBUTE", "ConversationKeys", "read_conversation"]

CONVERSATION_ATTRIBUTES: Final[tuple[str, ...]] = ("gen_ai.conversation.id", "session.id")
END_ATTRIBUTE: Final = "scorewatch.conversation.end"
MAX_ID_CHARS: Final = 256


@dataclass(frozen=True, slots=True)
class ConversationKeys:
    """The attributes that name a span's conversation (the first one found wins) and the one
    that marks the conversation's last turn."""

    attributes: tuple[str, ...] = CONVERSATION_ATTRIBUTES
    end_attribute: str = END_ATTRIBUTE


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def read_conversation(
    attribute_maps: Iterable[Mapping[str, Any]], keys: ConversationKeys
) -> tuple[str | None, bool]:
    """(the conversation id, whether the run ends it) from the spans' attributes in the order
    they are to be read. An id that is not text, is blank or is longer than 256 characters
    names no conversation (a hostile id must not become a key without bound)."""
    found: str | None = None
    ends = False
    names, end = keys.attributes, keys.end_attribute
    for attributes in attribute_maps:
        if found is None:
            for key in names:
                value = attributes.get(key)
                if value is None:  # the common case: asked of every span of every run read
                    continue
                if isinstance(value, int | float) and not isinstance(value, bool):
                    value = str(value)
                if isinstance(value, str) and value.strip() and len(value) <= MAX_ID_CHARS:
                    found = value
                    break
        if not ends:
            flag = attributes.get(end)
            ends = flag is not None and _truthy(flag)
    return found, ends
