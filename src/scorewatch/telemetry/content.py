"""Whether prompts, judge outputs, evaluated input/output and reasons may be exported.

Off by default. `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` accepts `true`/`false` and
the GenAI modes `NO_CONTENT`, `SPAN_ONLY`, `EVENT_ONLY`, `SPAN_AND_EVENT` (any case); a value
passed to `instrument(capture_content=...)` wins over the environment.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from .names import ENV_CAPTURE_CONTENT

__all__ = ["CaptureContent", "ContentCapture", "resolve_capture"]

logger = logging.getLogger("scorewatch.telemetry")

CaptureContent = bool | str | None
"""What `instrument(capture_content=...)` accepts: a bool, a mode name, or None (environment)."""


@dataclass(frozen=True, slots=True)
class ContentCapture:
    on_spans: bool = False
    on_events: bool = False

    @property
    def any(self) -> bool:
        return self.on_spans or self.on_events


NO_CONTENT = ContentCapture()
_MODES: dict[str, ContentCapture] = {
    "true": ContentCapture(True, True),
    "false": NO_CONTENT,
    "no_content": NO_CONTENT,
    "span_only": ContentCapture(True, False),
    "event_only": ContentCapture(False, True),
    "span_and_event": ContentCapture(True, True),
}


def _parse(value: str, origin: str) -> ContentCapture:
    mode = _MODES.get(value.strip().lower())
    if mode is None:
        logger.warning("unknown %s value %r; content capture stays off", origin, value)
        return NO_CONTENT
    return mode


def resolve_capture(option: CaptureContent = None) -> ContentCapture:
    if isinstance(option, bool):
        return ContentCapture(option, option)
    if isinstance(option, str):
        return _parse(option, "capture_content")
    env = os.environ.get(ENV_CAPTURE_CONTENT)
    if env is None or not env.strip():
        return NO_CONTENT
    return _parse(env, ENV_CAPTURE_CONTENT)
