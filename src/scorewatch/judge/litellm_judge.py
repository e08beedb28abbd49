"""The judge for a model id: litellm for any provider, a fast path for OpenAI-compatible ones.

litellm (and the openai SDK under it) would retry 408/429/5xx on its own, invisibly to the judge
record. Here those retries are switched off (`max_retries=0`, `num_retries=0`); the scorer core
retries instead, per `LiteLLMJudge.retry_policy`, counting every attempt. This class only makes
the call and classifies its failure.

Which client makes the call is `transport` (see `routing`): scorewatch's own chat-completions
client (`"openai_http"`, under a millisecond of CPU per call) for OpenAI-compatible models, litellm
for everything else. Both fill the same reply, raise the same errors, and count the same way.

litellm is imported on the first call, so `import scorewatch` stays fast, and never on the
caller's event loop: that import costs seconds of CPU (and the fast path's aiohttp client some
more), so the first call awaits a warm-up in a worker thread, once per process
(`warm_up_in_background`), and reads its model's facts there too. Prices for
`estimated_cost_usd` come from litellm's price table, read once per model; a model it does not
know gets no estimate (register one with `litellm.register_model({"openai/my-model":
{"input_cost_per_token": ..., "output_cost_per_token": ..., "litellm_provider": "openai",
"mode": "chat"}})`, which may also declare `"supports_response_schema": True`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .breaker import CredentialBreaker
from .credentials import key_from_environment, key_hint, mentions_missing_key, missing_key_message
from .errors import JudgeError, JudgeTimeoutError
from .prices import ModelFacts, batch_facts, estimate_cost, model_facts
from .protocol import JudgeReply, JudgeRequest
from .provider_errors import classify_provider_error, missing_key_error
from .replies import ReplyShape, StreamState, completion_fields
from .retry import RetryPolicy
from .routing import Transport, TransportChoice, choose_transport
from .structured import Placement, render_messages, resolve_injection
from .usage import JudgeUsage
from .warm_up import litellm_off_the_loop as _litellm_off_the_loop
from .warm_up import warm_up_in_background, warm_up_litellm

if TYPE_CHECKING:
    from .batch_api import OpenAIBatchClient
    from .openai_http import OpenAIChatClient

__all__ = ["LiteLLMJudge", "warm_up_in_background", "warm_up_litellm"]

logger = logging.getLogger("scorewatch.judge")

_warned: set[str] = set()

_TIMEOUT_GRACE_S = 1.0
"""How long past its own `timeout` the client gets before the call is abandoned regardless."""

_SECRET_OPTIONS = frozenset(
    {"api_key", "aws_secret_access_key", "aws_session_token", "azure_ad_token", "headers"}
)
# Options the judge owns: retries must stay off inside litellm, the rest is set per call.
_RESERVED_OPTIONS = frozenset(
    {"model", "messages", "max_retries", "num_retries", "stream", "stream_options", "timeout"}
)


class LiteLLMJudge:
    """A `JudgeModel` for a litellm model id.

    ```python
    judge = LiteLLMJudge("openai/gpt-4o-mini", temperature=0, timeout=30)
    judge = LiteLLMJudge("openai/local", api_base="http://127.0.0.1:8000/v1", api_key="...")
    judge = LiteLLMJudge("anthropic/claude-sonnet-4-5", transport="litellm")
    ```

    `max_retries` (default 2) sets the retry policy of transient failures (408, 429, 5xx,
    timeouts, dropped connections); pass `retry_policy` for full control. `timeout` bounds every
    call, streamed or not. `stream=True` streams the answer (usage from the final chunk).
    `native_structured_output` overrides litellm's verdict on whether the model supports a
    JSON-schema response format. `transport` picks the client: `"auto"` (scorewatch's own
    OpenAI-compatible client when it can serve the model and options, else litellm),
    `"litellm"` or `"openai_http"`. `api_key_env` names the environment variable holding the API
    key (read once, here; errors and `missing_api_key()` name it). After
    `pause_after_auth_failures` credential failures in a row (401, 403) the judge makes no call
    for `auth_failure_pause_s` seconds: each fails at once with `JUDGE_PAUSED` (see `breaker`).
    Other keyword arguments go to the request as is.

    Usage is what the provider reported; a reply without a usage block has empty usage. On
    streams through litellm, litellm counts tokens itself when the provider sends no usage chunk,
    and those counts are what the reply carries then (the fast path asks for the usage chunk and
    reports none if the server sends none).
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
        transport: TransportChoice = "auto",
        api_key_env: str | None = None,
        pause_after_auth_failures: int = 3,
        auth_failure_pause_s: float = 60.0,
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
        self._key_env = api_key_env if api_key_env and "api_key" not in self._options else None
        if self._key_env is not None:
            key = key_from_environment(self._key_env)
            if key is not None:
                self._options["api_key"] = key
        self._breaker = CredentialBreaker(pause_after_auth_failures, auth_failure_pause_s)
        self._provider = _provider_from_id(model, litellm_options.get("custom_llm_provider"))
        base = litellm_options.get("api_base") or litellm_options.get("base_url")
        self._server = _server_of(base)
        self._transport: Transport = choose_transport(
            transport, model, self._provider, self._options
        )
        self._client: OpenAIChatClient | None = None
        self._facts: ModelFacts | None = None
        from_env = self._key_env if "api_key" in self._options else None
        self._key_hint = key_hint(self._provider, self._options, from_env)
        missing = self.missing_api_key()
        if missing is None and self._key_env is not None and from_env is None:
            missing = (
                f"api_key_env names {self._key_env}, which is not set: judge model "
                f"{model!r} uses {self._key_hint or 'the provider default'} instead"
            )
        if missing is not None and missing not in _warned:
            # Not an error yet: the variable may be set before the first call. Once per process.
            _warned.add(missing)
            logger.warning("%s", missing)

    # --- JudgeModel -------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def provider(self) -> str | None:
        return self._provider

    @property
    def transport(self) -> Transport:
        """The client serving this judge: `"openai_http"` (the fast path) or `"litellm"`."""
        return self._transport

    @property
    def options(self) -> dict[str, Any]:
        """The request options, secrets masked."""
        return {k: ("***" if k in _SECRET_OPTIONS else v) for k, v in self._options.items()}

    def missing_api_key(self) -> str | None:
        """One line naming the variable and the model when the API key is certainly missing."""
        return missing_key_message(
            self._model, self._provider, self._options, key_env=self._key_env
        )

    @property
    def paused_calls(self) -> int:
        """Calls refused (`JUDGE_PAUSED`) after credential failures in a row."""
        return self._breaker.paused_calls

    def __repr__(self) -> str:
        return (
            f"LiteLLMJudge(model={self._model!r}, transport={self._transport!r}, "
            f"timeout={self.timeout}, max_retries={self.retry_policy.max_retries}, "
            f"options={self.options!r})"
        )

    __str__ = __repr__

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        litellm = await _litellm_off_the_loop()
        missing = missing_key_message(
            self._model, self._provider, self._options, strict=True, key_env=self._key_env
        )
        if missing is not None and not _litellm_has_global_key(litellm, self._transport):
            raise missing_key_error(missing)
        self._breaker.check(self._model)
        if self._facts is None:  # the first look at litellm's tables: not on the loop either
            await asyncio.to_thread(self._model_facts, litellm)
        facts = self._model_facts(litellm)
        placement = self._placement(facts, request)
        partial = StreamState()
        try:
            if self._transport == "openai_http":
                async with asyncio.timeout(self.timeout):
                    shape = await self._complete_http(request, placement, partial)
            else:
                async with asyncio.timeout(self.timeout + _TIMEOUT_GRACE_S):
                    shape = await self._complete_litellm(litellm, request, placement, partial)
        except JudgeError as error:
            self._breaker.failed(self._model, error)
            raise
        except TimeoutError as error:
            timeout = JudgeTimeoutError(
                f"judge call to model {self._model!r} did not finish within {self.timeout:g}s",
                code="TIMEOUT",
                retryable=True,
            )
            raise partial.attach(timeout) from error
        except Exception as error:
            failure = self._failure(error)
            self._breaker.failed(self._model, failure)
            raise partial.attach(failure) from error
        self._breaker.succeeded()
        return shape.reply(
            estimate=lambda usage: self._estimate_cost(facts, usage),
            server=self._server,
            placement=placement,
            streamed=self.stream,
            transport=self._transport,
        )

    # --- through the Batch API (judge/batching.py) --------------------------------------------

    async def batch_body(self, request: JudgeRequest) -> dict[str, Any]:
        """The chat-completions body `complete` would POST for `request` (never streamed), as
        one line of a Batch API input file carries it."""
        if self._transport != "openai_http":
            raise JudgeError(
                f"judge model {self._model!r} cannot be batched: the Batch API path serves "
                "OpenAI-compatible models (openai/<name>) with options sent as they are",
                code="BATCH_UNSUPPORTED",
                category="USER",
                retryable=False,
            )
        litellm = await _litellm_off_the_loop()
        missing = missing_key_message(
            self._model, self._provider, self._options, strict=True, key_env=self._key_env
        )
        if missing is not None:
            raise missing_key_error(missing)
        if self._facts is None:
            await asyncio.to_thread(self._model_facts, litellm)
        placement = self._placement(self._model_facts(litellm), request)
        extra = {k: v for k, v in self._extra(request, placement).items() if "stream" not in k}
        return self._chat().payload(render_messages(request, placement), extra)

    def batch_reply(self, request: JudgeRequest, response: Any, batch_id: str) -> JudgeReply:
        """The reply a batch output line's `response.body` (a chat completion) makes, priced
        at the batch price (`prices.batch_facts`, its source in `metadata["price_source"]`)."""
        facts, source = batch_facts(self._facts or ModelFacts())
        placement = self._placement(self._facts or ModelFacts(), request)
        reply = completion_fields(response).reply(
            estimate=lambda usage: estimate_cost(facts, usage),
            server=self._server,
            placement=placement,
            streamed=False,
            transport="openai_batch",
        )
        metadata = {**reply.metadata, "batch_id": batch_id, "price_source": source}
        return replace(reply, metadata=metadata)

    def batch_client(self) -> OpenAIBatchClient:
        """The Batch API of the server this judge calls."""
        from .batch_api import OpenAIBatchClient

        return OpenAIBatchClient(self._chat())

    def batch_failure(self, error: Exception) -> JudgeError:
        """`error` (an HTTP status, a dropped connection) as the `JudgeError` a direct call
        failing the same way raises."""
        return error if isinstance(error, JudgeError) else self._failure(error)

    def _chat(self) -> OpenAIChatClient:
        client = self._client
        if client is None:
            from .openai_http import OpenAIChatClient

            client = self._client = OpenAIChatClient(self._model, self._options)
        return client

    # --- the call ---------------------------------------------------------------------------

    def _model_facts(self, litellm: Any) -> ModelFacts:
        facts = self._facts
        if facts is None or not facts.priced:
            # An unpriced model is asked again (cheaply, the table is cached by size): one
            # registered after this judge was built gets its price.
            facts = self._facts = model_facts(
                litellm, self._model, self._options.get("custom_llm_provider")
            )
        return facts

    def _failure(self, error: Exception) -> JudgeError:
        if mentions_missing_key(error):
            hint = self._key_hint or "the provider's API key variable"
            return missing_key_error(
                f"judge model {self._model!r} has no API key: set {hint} (or pass api_key)"
            )
        return classify_provider_error(
            error, model=self._model, key_hint=self._key_hint, address=self._endpoint()
        )

    def _endpoint(self) -> str | None:
        """The URL the judge calls, without credentials, when it is known here."""
        url = self._client.url() if self._client is not None else None
        url = url or self._options.get("api_base") or self._options.get("base_url")
        if not isinstance(url, str) or not url:
            return None
        try:
            parts = urlsplit(url)
            netloc = parts.hostname or ""
            if parts.port is not None:
                netloc += f":{parts.port}"
        except ValueError:
            return None
        return f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else None

    def _placement(self, facts: ModelFacts, request: JudgeRequest) -> Placement:
        if request.schema is None:
            return "system"
        native = self._native if self._native is not None else facts.supports_response_schema
        return resolve_injection(request.json_prompt_injection, supports_native=native)

    def _extra(self, request: JudgeRequest, placement: Placement) -> dict[str, Any]:
        """The request fields beyond model, messages and the user's options."""
        extra: dict[str, Any] = {}
        if request.schema is not None and placement == "native":
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(request.step),
                    "schema": request.schema,
                    "strict": False,
                },
            }
        if self.stream:
            extra["stream"] = True
            extra["stream_options"] = {"include_usage": True}
        return extra

    async def _complete_http(
        self, request: JudgeRequest, placement: Placement, state: StreamState
    ) -> ReplyShape:
        client = self._chat()
        body = client.body(render_messages(request, placement), self._extra(request, placement))
        if self.stream:
            await client.stream(body, state)
            return state.shape()
        return completion_fields(await client.complete(body))

    async def _complete_litellm(
        self, litellm: Any, request: JudgeRequest, placement: Placement, state: StreamState
    ) -> ReplyShape:
        arguments: dict[str, Any] = {
            **self._options,
            "model": self._model,
            "messages": render_messages(request, placement),
            "timeout": self.timeout,
            "max_retries": 0,
            "num_retries": 0,
            **self._extra(request, placement),
        }
        if not self.stream:
            return completion_fields(await litellm.acompletion(**arguments))
        stream = await litellm.acompletion(**arguments)
        async for chunk in stream:
            state.add(chunk)
        return state.shape()

    def _estimate_cost(self, facts: ModelFacts, usage: JudgeUsage) -> float | None:
        """The price-table cost of this usage, never the provider's own figure."""
        return estimate_cost(facts, usage)


def _litellm_has_global_key(litellm: Any, transport: Transport) -> bool:
    # `litellm.api_key = ...` set in code is litellm's own way of giving the key.
    return transport == "litellm" and bool(
        getattr(litellm, "api_key", None) or getattr(litellm, "openai_key", None)
    )


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
