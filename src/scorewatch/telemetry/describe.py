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


def _text_part(text: str) -> dict[str, str]:
    return {"type": "text", "content": text}


def system_instructions(request: JudgeRequest) -> str:
    return json.dumps([_text_part(request.instructions)], ensure_ascii=False)


def input_messages(request: JudgeRequest) -> str:
    return json.dumps([{"role": "user", "parts": [_text_part(request.prompt)]}], ensure_ascii=False)


def output_messages(reply: JudgeReply) -> str:
    message: dict[str, Any] = {"role": "assistant", "parts": [_text_part(reply.text)]}
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
    if capture and redact is not None:
        span.add_event(
            "exception",
            {
                "exception.type": _qualified_name(type(error)),
                "exception.message": redact(str(error)),
                "exception.stacktrace": redact("".join(traceback.format_exception(error))),
            },
        )
        return
    if capture:
        span.record_exception(error)
        return
    # Without content capture, only the stable code and the class: an exception's message and
    # its traceback (with every chained cause) can quote the provider's error body, which may
    # hold the API key or the evaluated content.
    span.add_event(
        "exception",
        {"exception.type": _qualified_name(type(error)), "exception.message": kind},
    )


def _qualified_name(cls: type) -> str:
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
