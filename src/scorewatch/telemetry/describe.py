"""Turning runs, errors and judge calls into attribute values, and an error onto a span (the
OpenTelemetry API only, no SDK here)."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from ..errors import ScorewatchError
from ..judge.protocol import JudgeReply, JudgeRequest
from ..judge.usage import JudgeUsage
from . import names

__all__ = [
    "Attributes",
    "error_type",
    "evaluated_response_id",
    "input_messages",
    "mark_failed",
    "output_messages",
    "provider_model",
    "provider_name",
    "system_instructions",
    "to_json",
    "usage_attributes",
]


Attributes = dict[str, AttributeValue]
"""Span, metric and event attributes as telemetry builds them."""


def error_type(error: BaseException) -> str:
    """A low-cardinality `error.type`: the stable code of a scorewatch error, else the class.

    A run failure wraps the step's error; the wrapped error says more than the wrapper does.
    """
    cause = error
    if getattr(error, "failed_step", None) is not None and error.__cause__ is not None:
        cause = error.__cause__
    if isinstance(cause, ScorewatchError) and cause.code:
        return cause.code
    cls = type(cause)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


# litellm's provider names -> the GenAI conventions' well-known `gen_ai.provider.name` values
# (semantic-conventions v1.41 registry); providers without one keep litellm's name.
_WELL_KNOWN_PROVIDERS = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
    "cohere_chat": "cohere",
}


def provider_name(provider: str) -> str:
    """`gen_ai.provider.name` for a litellm provider name."""
    return _WELL_KNOWN_PROVIDERS.get(provider, provider)


def provider_model(model_route: str, provider: str | None) -> str:
    """The model name the provider sees: litellm's `openai/gpt-4o-mini` -> `gpt-4o-mini`.

    litellm strips its provider prefix before calling the provider, so the GenAI metrics of the
    judge line up with the application's own (which name the model as the provider does).
    """
    if provider:
        prefix, sep, rest = model_route.partition("/")
        if sep and rest and prefix == provider:
            return rest
    return model_route


def evaluated_response_id(target_metadata: Any) -> str | None:
    """The evaluated completion's id, when the caller gave it in the run's `target_metadata`."""
    if not isinstance(target_metadata, dict):
        return None
    value = target_metadata.get(names.METADATA_RESPONSE_ID)
    return value if isinstance(value, str) and value else None


def to_json(value: Any) -> str:
    """A JSON string for a content attribute; anything not JSON-native is rendered with str()."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


# The messages' texts are redacted (`redact`, a privacy policy's) before they are written as
# JSON, never the JSON text after: JSON escapes a line break as `\n`, so a value after one
# reads as `nDE89 ...` in the JSON text, which no recogniser reads as an IBAN. And the run's
# row holds the same texts (the prompt, the reply), so each is scanned once for both.


def _text_part(text: str, redact: Callable[[str], str] | None) -> dict[str, str]:
    return {"type": "text", "content": text if redact is None else redact(text)}


def system_instructions(request: JudgeRequest, redact: Callable[[str], str] | None = None) -> str:
    return json.dumps([_text_part(request.instructions, redact)], ensure_ascii=False)


def input_messages(request: JudgeRequest, redact: Callable[[str], str] | None = None) -> str:
    parts = [_text_part(request.prompt, redact)]
    return json.dumps([{"role": "user", "parts": parts}], ensure_ascii=False)


def output_messages(reply: JudgeReply, redact: Callable[[str], str] | None = None) -> str:
    message: dict[str, Any] = {"role": "assistant", "parts": [_text_part(reply.text, redact)]}
    if reply.finish_reason:
        message["finish_reason"] = reply.finish_reason
    return json.dumps([message], ensure_ascii=False)


_USAGE_ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("input_tokens", names.ATTR_USAGE_INPUT_TOKENS),
    ("output_tokens", names.ATTR_USAGE_OUTPUT_TOKENS),
    ("cached_input_tokens", names.ATTR_USAGE_CACHE_READ_INPUT_TOKENS),
    ("cache_creation_input_tokens", names.ATTR_USAGE_CACHE_CREATION_INPUT_TOKENS),
    ("reasoning_tokens", names.ATTR_USAGE_REASONING_OUTPUT_TOKENS),
)


def usage_attributes(usage: JudgeUsage) -> dict[str, int]:
    return {
        attribute: value
        for key, attribute in _USAGE_ATTRIBUTES
        if (value := getattr(usage, key)) is not None
    }


def mark_failed(
    span: Span, error: BaseException, capture: bool, redact: Callable[[str], str] | None = None
) -> None:
    """Mark `span` (a chat span, a step's or the run's) as ended by `error`; with content
    capture and a privacy policy's `redact`, its message and traceback are redacted."""
    kind = error_type(error)
    span.set_attribute(names.ATTR_ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, kind))
    attributes: Attributes = {"exception.type": _qualified_name(type(error))}
    if capture:
        # Content may leave, secrets never: scorewatch's own messages are written from codes,
        # statuses and model ids, but another library's exception (a provider client's) can
        # quote the provider's answer, and the provider can quote the API key. So the trace
        # keeps every frame of every chained cause and the messages of scorewatch errors only.
        # A privacy policy's `redact` also takes the personal data out of what is left.
        keep = redact or (lambda text: text)
        attributes["exception.message"] = keep(_message(error))
        attributes["exception.stacktrace"] = keep(_stacktrace(error))
    else:
        # Without content capture, only the stable code and the class: even scorewatch's own
        # messages can quote the evaluated content (a failed step's error).
        attributes["exception.message"] = kind
    span.add_event("exception", attributes)


_WITHHELD = "(message withheld: another library's error can quote credentials)"


def _message(error: BaseException) -> str:
    return str(error) if isinstance(error, ScorewatchError) else _WITHHELD


def _stacktrace(error: BaseException) -> str:
    """`error`'s traceback as Python prints it, causes first, with `_message` for each."""
    chain: list[tuple[BaseException, str]] = []
    link: BaseException | None = error
    joint = ""
    while link is not None and all(link is not seen for seen, _ in chain):
        chain.append((link, joint))
        if link.__cause__ is not None:
            link, joint = link.__cause__, _CAUSE
        elif link.__context__ is not None and not link.__suppress_context__:
            link, joint = link.__context__, _CONTEXT
        else:
            link = None
    parts: list[str] = []
    for link, joint in reversed(chain):
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_tb(link.__traceback__))
        parts.append(f"{_qualified_name(type(link))}: {_message(link)}\n")
        parts.append(joint)
    return "".join(parts)


_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _qualified_name(cls: type) -> str:
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
