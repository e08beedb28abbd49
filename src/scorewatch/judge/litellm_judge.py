"""A judge backed by litellm: any provider litellm supports, one HTTP request per call.

litellm (and the openai SDK under it) would retry 408/429/5xx on its own, invisibly to the judge
record. Here those retries are switched off (`max_retries=0`, `num_retries=0`); the scorer core
retries instead, per `LiteLLMJudge.retry_policy`, counting every attempt. This class only makes
the call and classifies its failure.

litellm is imported on the first call, so `import scorewatch` stays fast. Prices for
`estimated_cost_usd` come from litellm's price table; a model it does not know gets no estimate
(register one with `litellm.register_model({"openai/my-model": {"input_cost_per_token": ...,
"output_cost_per_token": ..., "litellm_provider": "openai", "mode": "chat"}})`, which may also
declare `"supports_response_schema": True`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .errors import JudgeError, JudgeTimeoutError
from .protocol import JudgeCost, JudgeReply, JudgeRequest
from .provider_errors import classify_provider_error
from .retry import RetryPolicy
from .structured import Placement, render_messages, resolve_injection
from .usage import EMPTY_USAGE, JudgeUsage, normalize_usage

__all__ = ["LiteLLMJudge", "warm_up_litellm"]

_TIMEOUT_GRACE_S = 1.0
"""How long past its own `timeout` the client gets before the call is abandoned regardless."""

_SECRET_OPTIONS = frozenset(
    {"api_key", "aws_secret_access_key", "aws_session_token", "azure_ad_token", "headers"}
)
# Options the judge owns: retries must stay off inside litellm, the rest is set per call.
_RESERVED_OPTIONS = frozenset(
    {"model", "messages", "max_retries", "num_retries", "stream", "stream_options", "timeout"}
)


def _import_litellm() -> Any:
    import litellm

    # litellm prints a "Give Feedback / Get Help" banner to stdout on every failed call.
    litellm.suppress_debug_info = True
    return litellm


def warm_up_litellm() -> None:
    """Import litellm and walk one offline (mocked) completion through it; never raises.

    litellm imports much of itself on the first call, which takes seconds of CPU: whoever runs
    judged scorers on an event loop calls this first, in a thread, so that cost is not paid on
    the loop."""
    try:
        litellm = _import_litellm()
        litellm.completion(
            model="openai/scorewatch-warm-up",
            messages=[{"role": "user", "content": "warm-up"}],
            mock_response="ok",
        )
    except Exception as error:  # a failed warm-up only costs the first run some time
        logging.getLogger("scorewatch.judge").debug(
            "judge warm-up failed (%s)", type(error).__name__
        )


class LiteLLMJudge:
    """A `JudgeModel` calling `litellm.acompletion`.

    ```python
    judge = LiteLLMJudge("openai/gpt-4o-mini", temperature=0, timeout=30)
    judge = LiteLLMJudge("openai/local", api_base="http://127.0.0.1:8000/v1", api_key="...")
    ```

    `max_retries` (default 2) sets the retry policy of transient failures (408, 429, 5xx,
    timeouts, dropped connections); pass `retry_policy` for full control. `timeout` bounds every
    call, streamed or not. `stream=True` streams the answer (usage from the final chunk).
    `native_structured_output` overrides litellm's verdict on whether the model supports a
    JSON-schema response format. Other keyword arguments go to `litellm.acompletion` as is.

    Usage is what the provider reported; a reply without a usage block has empty usage. On
    streams litellm counts tokens itself when the provider sends no usage chunk, and those counts
    are what the reply carries then.
    """

    def __init__(
        self,
        model: str,
        *,
        max_retries: int = 2,
        retry_policy: RetryPolicy | None = None,
        timeout: float = 60.0,
        stream: bool = False,
        native_structured_output: bool | None = None,
        **litellm_options: Any,
    ) -> None:
        if not model:
            raise ValueError("LiteLLMJudge needs a model id, e.g. 'openai/gpt-4o-mini'")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self._model = model
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self.timeout = float(timeout)
        self.stream = stream
        self._native = native_structured_output
        self._options = {k: v for k, v in litellm_options.items() if k not in _RESERVED_OPTIONS}
        self._provider = _provider_from_id(model, litellm_options.get("custom_llm_provider"))
        self._server_address, self._server_port = _server_of(
            litellm_options.get("api_base") or litellm_options.get("base_url")
        )
        self._unpriced_at: int | None = None

    # --- JudgeModel -------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def provider(self) -> str | None:
        return self._provider

    @property
    def options(self) -> dict[str, Any]:
        """The litellm options, secrets masked."""
        return {k: ("***" if k in _SECRET_OPTIONS else v) for k, v in self._options.items()}

    def __repr__(self) -> str:
        return (
            f"LiteLLMJudge(model={self._model!r}, timeout={self.timeout}, "
            f"max_retries={self.retry_policy.max_retries}, options={self.options!r})"
        )

    __str__ = __repr__

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        litellm = _import_litellm()
        placement = self._placement(litellm, request)
        arguments = self._arguments(request, placement)
        partial = _StreamState()
        try:
            async with asyncio.timeout(self.timeout + _TIMEOUT_GRACE_S):
                if self.stream:
                    return await self._complete_streaming(litellm, arguments, placement, partial)
                response = await litellm.acompletion(**arguments)
                return self._reply(litellm, response, placement)
        except JudgeError:
            raise
        except TimeoutError as error:
            timeout = JudgeTimeoutError(
                f"judge call to model {self._model!r} did not finish within {self.timeout:g}s",
                code="TIMEOUT",
                retryable=True,
            )
            raise partial.attach(timeout) from error
        except Exception as error:
            failure = classify_provider_error(error, model=self._model)
            raise partial.attach(failure) from error

    # --- the call ---------------------------------------------------------------------------

    def _placement(self, litellm: Any, request: JudgeRequest) -> Placement:
        if request.schema is None:
            return "system"
        return resolve_injection(
            request.json_prompt_injection, supports_native=self._supports_native(litellm)
        )

    def _supports_native(self, litellm: Any) -> bool:
        if self._native is not None:
            return self._native
        try:
            return bool(
                litellm.supports_response_schema(
                    model=self._model, custom_llm_provider=self._options.get("custom_llm_provider")
                )
            )
        except Exception:  # an unknown model or provider: ask in the prompt instead
            return False

    def _arguments(self, request: JudgeRequest, placement: Placement) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            **self._options,
            "model": self._model,
            "messages": render_messages(request, placement),
            "timeout": self.timeout,
            "max_retries": 0,
            "num_retries": 0,
        }
        if request.schema is not None and placement == "native":
            arguments["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(request.step),
                    "schema": request.schema,
                    "strict": False,
                },
            }
        if self.stream:
            arguments["stream"] = True
            arguments["stream_options"] = {"include_usage": True}
        return arguments

    def _reply(self, litellm: Any, response: Any, placement: Placement) -> JudgeReply:
        choice = _first(getattr(response, "choices", None))
        message = getattr(choice, "message", None)
        usage_block = _as_mapping(getattr(response, "usage", None))
        return self._build_reply(
            litellm,
            text=_text(getattr(message, "content", None)),
            finish_reason=getattr(choice, "finish_reason", None),
            usage_block=usage_block,
            provider_cost=_provider_cost(response, usage_block),
            response_id=getattr(response, "id", None),
            response_model=getattr(response, "model", None),
            placement=placement,
            streamed=False,
        )

    async def _complete_streaming(
        self,
        litellm: Any,
        arguments: dict[str, Any],
        placement: Placement,
        state: _StreamState,
    ) -> JudgeReply:
        stream = await litellm.acompletion(**arguments)
        async for chunk in stream:
            state.add(chunk)
        return self._build_reply(
            litellm,
            text="".join(state.parts),
            finish_reason=state.finish_reason,
            usage_block=state.usage_block,
            provider_cost=state.provider_cost,
            response_id=state.response_id,
            response_model=state.response_model,
            placement=placement,
            streamed=True,
        )

    def _build_reply(
        self,
        litellm: Any,
        *,
        text: str,
        finish_reason: Any,
        usage_block: Mapping[str, Any] | None,
        provider_cost: float | None,
        response_id: Any,
        response_model: Any,
        placement: Placement,
        streamed: bool,
    ) -> JudgeReply:
        usage = normalize_usage(usage_block) if usage_block else EMPTY_USAGE
        if not any(usage.as_dict().values()):
            # litellm fills in zeros when the provider sent no usage block: that is "unknown".
            usage = EMPTY_USAGE
        return JudgeReply(
            text=text,
            usage=usage,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            model_call_count=1,
            response_model=response_model if isinstance(response_model, str) else None,
            response_id=response_id if isinstance(response_id, str) else None,
            cost=(
                JudgeCost(amount=provider_cost, unit="USD", source="provider")
                if provider_cost is not None
                else None
            ),
            estimated_cost_usd=self._estimate_cost(litellm, usage),
            server_address=self._server_address,
            server_port=self._server_port,
            metadata={"structured_output": placement, "streamed": streamed},
        )

    def _estimate_cost(self, litellm: Any, usage: JudgeUsage) -> float | None:
        """The price-table cost of this usage, never the provider's own figure."""
        if usage.input_tokens is None and usage.output_tokens is None:
            return None
        price_table = getattr(litellm, "model_cost", None)
        version = len(price_table) if isinstance(price_table, Mapping) else 0
        if self._unpriced_at == version:
            return None  # looked up before and not found; the table has not grown since
        try:
            from litellm.types.utils import Usage

            details = (
                {"cached_tokens": usage.cached_input_tokens}
                if usage.cached_input_tokens is not None
                else None
            )
            priced = Usage(
                prompt_tokens=usage.input_tokens or 0,
                completion_tokens=usage.output_tokens or 0,
                total_tokens=usage.total_tokens or 0,
                prompt_tokens_details=details,
                cache_creation_input_tokens=usage.cache_creation_input_tokens,
            )
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=self._model,
                prompt_tokens=usage.input_tokens or 0,
                completion_tokens=usage.output_tokens or 0,
                custom_llm_provider=self._options.get("custom_llm_provider"),
                usage_object=priced,
            )
        except Exception:  # no price for this model: no estimate, and no error
            self._unpriced_at = version
            return None
        total = float(prompt_cost) + float(completion_cost)
        return total if total == total and total >= 0 else None


class _StreamState:
    """What a streamed answer delivered so far, kept as evidence if the stream then fails."""

    __slots__ = (
        "finish_reason",
        "parts",
        "provider_cost",
        "response_id",
        "response_model",
        "usage_block",
    )

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage_block: Mapping[str, Any] | None = None
        self.provider_cost: float | None = None
        self.response_id: str | None = None
        self.response_model: str | None = None

    def add(self, chunk: Any) -> None:
        self.response_id = self.response_id or getattr(chunk, "id", None)
        self.response_model = self.response_model or getattr(chunk, "model", None)
        for choice in getattr(chunk, "choices", None) or ():
            content = getattr(getattr(choice, "delta", None), "content", None)
            if isinstance(content, str):
                self.parts.append(content)
            reason = getattr(choice, "finish_reason", None)
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        usage = _as_mapping(getattr(chunk, "usage", None))
        if usage:
            self.usage_block = usage
            self.provider_cost = _provider_cost(chunk, usage)

    def attach(self, error: JudgeError) -> JudgeError:
        """Let the judge record count a stream that reached the model before it broke."""
        text = "".join(self.parts)
        usage = normalize_usage(self.usage_block) if self.usage_block else EMPTY_USAGE
        if text or not usage.is_empty():
            error.text = text or None
            error.usage = None if usage.is_empty() else usage
            error.model_call_count = 1
        return error


def _first(items: Any) -> Any:
    if isinstance(items, list | tuple) and items:
        return items[0]
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(getattr(part, "text", ""))
            for part in content
        )
    return ""


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump()
        except Exception:
            return None
        return dumped if isinstance(dumped, Mapping) else None
    return None


def _provider_cost(response: Any, usage_block: Mapping[str, Any] | None) -> float | None:
    """The cost the provider itself reported in its usage block, if it did.

    When litellm writes its own computed bill into `usage.cost` (it does on streams), it keeps
    the upstream figure in `_hidden_params["upstream_usage_cost"]`; that one is authoritative.
    """
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, Mapping) and "upstream_usage_cost" in hidden:
        value: Any = hidden["upstream_usage_cost"]
    else:
        value = usage_block.get("cost") if usage_block else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    amount = float(value)
    return amount if amount == amount and amount >= 0 else None


def _schema_name(step: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{step}_output")
    return name[:64]


def _provider_from_id(model: str, explicit: Any) -> str | None:
    if isinstance(explicit, str) and explicit:
        return explicit
    prefix, sep, _ = model.partition("/")
    if sep and prefix:
        return prefix
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt-")):
        return "openai"
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith("gemini"):
        return "gemini"
    return None


def _server_of(api_base: Any) -> tuple[str | None, int | None]:
    if not isinstance(api_base, str) or not api_base:
        return None, None
    try:
        parts = urlsplit(api_base)
        port = parts.port
    except ValueError:
        return None, None
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    return parts.hostname, port
