"""One judge call as telemetry: its `chat` span (opened before the call, named after the model
and finished with what the reply said) and its metrics (token usage, operation duration, cost).

The run's listener keeps the open spans and calls these as the core reports each attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Tracer

from ..core.events import JudgeAttempt
from ..core.steps import StepName
from ..judge.protocol import JudgeReply, JudgeRequest
from . import describe, names
from .bound import BoundHistogram
from .describe import Attributes
from .instruments import Instruments

__all__ = ["AttemptSeries", "finish_chat_span", "open_chat_span", "record_attempt"]

AttemptSeries = tuple[BoundHistogram, BoundHistogram, BoundHistogram]
"""An attempt's histogram series: input tokens, output tokens, call duration."""

# Kept per scorer, keyed by what decides the attributes (guarded model, provider, step, error
# type); emptied when it reaches this many (error types are exception names: not bounded).
_ATTEMPT_SERIES_LIMIT = 1024


def open_chat_span(
    tracer: Tracer,
    parent: Span,
    step: StepName,
    request: JudgeRequest,
    known_model: tuple[str, str | None] | None,
    capture: bool,
    redact: Callable[[str], str] | None = None,
) -> tuple[Span, object, str | None]:
    """Start the `chat` span of one attempt under `parent` and make it current, so the HTTP
    client's or litellm's own spans nest under it. `known_model` is the step judge's (litellm
    route, provider) when the scorer exposes it. Returns the span, its context token and the
    model name it was given. With content capture, `redact` (a privacy policy's) redacts the
    messages."""
    route, provider = known_model or (None, None)
    model = describe.provider_model(route, provider) if route else None
    attributes: Attributes = {
        names.ATTR_OPERATION_NAME: names.OPERATION_CHAT,
        names.ATTR_STEP: step,
        names.ATTR_JUDGE_ATTEMPT: request.attempt,
        names.ATTR_JUDGE_FALLBACK: request.fallback,
    }
    if route and model:
        attributes[names.ATTR_REQUEST_MODEL] = model
        attributes[names.ATTR_JUDGE_MODEL_ROUTE] = route
    if capture:
        attributes[names.ATTR_SYSTEM_INSTRUCTIONS] = describe.system_instructions(request, redact)
        attributes[names.ATTR_INPUT_MESSAGES] = describe.input_messages(request, redact)
    span = tracer.start_span(
        names.chat_span_name(model) if model else names.OPERATION_CHAT,
        context=trace.set_span_in_context(parent),
        kind=SpanKind.CLIENT,
        attributes=attributes,
    )
    token = otel_context.attach(trace.set_span_in_context(span))
    return span, token, model


def finish_chat_span(
    span: Span,
    named: str | None,
    attempt: JudgeAttempt,
    capture: bool,
    redact: Callable[[str], str] | None = None,
) -> None:
    """End the attempt's span with the model that answered, usage, the reply's facts and cost;
    renamed when the model that answered is not the one it was `named` after."""
    reply = attempt.reply
    model = describe.provider_model(attempt.model_id, attempt.provider)
    if named != model:
        span.update_name(names.chat_span_name(model))
    attributes: Attributes = {
        names.ATTR_REQUEST_MODEL: model,
        names.ATTR_JUDGE_MODEL_ROUTE: attempt.model_id,
    }
    if attempt.provider:
        attributes[names.ATTR_PROVIDER_NAME] = describe.provider_name(attempt.provider)
    if attempt.transport:
        attributes[names.ATTR_JUDGE_TRANSPORT] = attempt.transport
    attributes.update(describe.usage_attributes(attempt.usage))
    if reply is not None:
        attributes.update(_reply_attributes(reply))
        cost = reply.known_cost()
        if cost is not None:
            amount, currency, source = cost
            attributes[names.ATTR_JUDGE_COST_AMOUNT] = amount
            attributes[names.ATTR_JUDGE_COST_CURRENCY] = currency
            attributes[names.ATTR_JUDGE_COST_SOURCE] = source
        if capture:
            attributes[names.ATTR_OUTPUT_MESSAGES] = describe.output_messages(reply, redact)
    span.set_attributes(attributes)
    if attempt.error is not None:
        describe.mark_failed(span, attempt.error, capture, redact)
    span.end()


def record_attempt(
    instruments: Instruments,
    model_guard: Callable[[str], str],
    scorer_id: str,
    attempt: JudgeAttempt,
    series: dict[Hashable, AttemptSeries],
) -> None:
    """The attempt's token usage, duration and (US dollar) cost, under the model name
    `model_guard` admits. `series`: the scorer's histogram series of earlier attempts (a
    guard's answer for a value never changes, so its key stands for the attributes)."""
    model = model_guard(describe.provider_model(attempt.model_id, attempt.provider))
    provider = describe.provider_name(attempt.provider) if attempt.provider else None
    error = describe.error_type(attempt.error) if attempt.error is not None else None
    key = (model, provider, attempt.step, error)
    known = series.get(key)
    if known is None:
        base: Attributes = {
            names.ATTR_OPERATION_NAME: names.OPERATION_CHAT,
            names.ATTR_REQUEST_MODEL: model,
            names.ATTR_EVALUATION_NAME: scorer_id,
            names.ATTR_STEP: attempt.step,
        }
        if provider is not None:
            base[names.ATTR_PROVIDER_NAME] = provider
        duration_attributes = dict(base)
        if error is not None:
            duration_attributes[names.ATTR_ERROR_TYPE] = error
        known = (
            BoundHistogram(
                instruments.token_usage, {**base, names.ATTR_TOKEN_TYPE: names.TOKEN_TYPE_INPUT}
            ),
            BoundHistogram(
                instruments.token_usage, {**base, names.ATTR_TOKEN_TYPE: names.TOKEN_TYPE_OUTPUT}
            ),
            BoundHistogram(instruments.operation_duration, duration_attributes),
        )
        if len(series) >= _ATTEMPT_SERIES_LIMIT:
            series.clear()
        series[key] = known
    usage = attempt.usage
    if usage.input_tokens is not None:
        known[0].record(usage.input_tokens)
    if usage.output_tokens is not None:
        known[1].record(usage.output_tokens)
    known[2].record(attempt.duration_s)
    # (amount, currency, source), as the judge records count it (`COST_SOURCE_*` values).
    cost = attempt.reply.known_cost() if attempt.reply is not None else None
    if cost is not None and cost[1].upper() == "USD":
        instruments.judge_cost.add(
            cost[0],
            {
                names.ATTR_REQUEST_MODEL: model,
                names.ATTR_EVALUATION_NAME: scorer_id,
                names.ATTR_STEP: attempt.step,
                names.ATTR_COST_SOURCE: cost[2],
            },
        )


def _reply_attributes(reply: JudgeReply) -> Attributes:
    attributes: Attributes = {}
    if reply.response_model:
        attributes[names.ATTR_RESPONSE_MODEL] = reply.response_model
    if reply.response_id:
        attributes[names.ATTR_RESPONSE_ID] = reply.response_id
    if reply.finish_reason:
        attributes[names.ATTR_RESPONSE_FINISH_REASONS] = [reply.finish_reason]
    if reply.server_address:
        attributes[names.ATTR_SERVER_ADDRESS] = reply.server_address
    if reply.server_port is not None:
        attributes[names.ATTR_SERVER_PORT] = reply.server_port
    return attributes
