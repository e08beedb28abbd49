"""The fast path: scorewatch's own chat-completions client for OpenAI-compatible judges.

Through `litellm.acompletion` a judge call costs the client 4-5 ms of CPU, almost all of it
litellm's per-call machinery (cost calculator, logging payloads, the openai SDK's request and
response models), not HTTP. This client sends the same request body and reads the same JSON
with aiohttp: one pooled keep-alive session per event loop, closed when the loop shuts down its
async generators (`asyncio.run`, `asyncio.Runner` and pytest's loops all do).

It raises the aiohttp exceptions themselves, or `HttpStatusError`, `ContextWindowExceededError`,
`MalformedResponseError`, `ResponseTooLargeError` and `UnsupportedProxyError`;
`provider_errors.classify_provider_error` turns every one into the same `JudgeError` the litellm
path gives. Nothing from the response body is copied into an exception.

What it trusts of the other end, and what not:
- redirects are never followed: a judge's prompt goes to the configured address and nowhere
  else, and only that address's answer is a verdict (a 3xx is a failed call,
  `REDIRECT_NOT_FOLLOWED`);
- an answer's body is read up to `MAX_RESPONSE_BYTES` once decompressed (gzip, deflate, ...),
  streamed or not; a bigger one is a failed attempt (`RESPONSE_TOO_LARGE`), whatever its
  compressed size;
- proxies come from the environment as the openai SDK's httpx client reads them: the scheme's
  variable (`HTTPS_PROXY`, `HTTP_PROXY`), else `ALL_PROXY`, unless `NO_PROXY` names the host.
  Only `http://` and `https://` proxies are spoken to; another kind (`socks5://`) is a failed
  call (`PROXY_UNSUPPORTED`), never a silent direct connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import urllib.request
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from .replies import StreamState
from .routing import BODY_OPTIONS

__all__ = [
    "MAX_RESPONSE_BYTES",
    "ContextWindowExceededError",
    "HttpStatusError",
    "MalformedResponseError",
    "OpenAIChatClient",
    "ResponseTooLargeError",
    "UnsupportedProxyError",
]

DEFAULT_BASE = "https://api.openai.com/v1"
MAX_RESPONSE_BYTES = 8 << 20
"""The most an answer's body may hold once decompressed: a verdict is a few kilobytes, the
longest completion a model writes well under a megabyte."""
_READ_CHUNK = 64 << 10
_PROXY_SCHEMES = frozenset({"http", "https"})


class _Response:
    __slots__ = ("headers",)

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.headers = headers


class HttpStatusError(Exception):
    """The provider answered with an error status (or a redirect, which is not followed)."""

    def __init__(self, status: int, headers: Mapping[str, str], error_code: str | None) -> None:
        # The provider's `code` is not in the message: it is the provider's text, and a broken
        # or hostile one can put anything there (the key it was sent, ...).
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.response = _Response(headers)
        self.error_code = error_code


class ContextWindowExceededError(HttpStatusError):
    """A 400 saying the prompt does not fit the model's context window."""


class MalformedResponseError(ValueError):
    """A 2xx answer that is not a chat completion."""


class ResponseTooLargeError(ValueError):
    """An answer whose body, decompressed, is over `MAX_RESPONSE_BYTES`."""

    def __init__(self) -> None:
        super().__init__(f"the answer's body is over {MAX_RESPONSE_BYTES} bytes")


class UnsupportedProxyError(ValueError):
    """The environment names a proxy this client cannot speak to (not http:// or https://)."""

    def __init__(self, scheme: str) -> None:
        super().__init__(
            f"the proxy the environment names is a {scheme}:// proxy; the fast judge client "
            "speaks to http:// and https:// proxies only (use transport='litellm')"
        )


async def _read_capped(answer: aiohttp.ClientResponse, cap: int = MAX_RESPONSE_BYTES) -> bytes:
    """The whole body, decompressed, or `ResponseTooLargeError` as soon as it is over `cap`
    (aiohttp decompresses as it is read, so a compressed bomb is never inflated past it)."""
    declared = answer.content_length
    if declared is not None and declared > cap:
        raise ResponseTooLargeError
    chunks: list[bytes] = []
    size = 0
    async for chunk in answer.content.iter_chunked(_READ_CHUNK):
        size += len(chunk)
        if size > cap:
            raise ResponseTooLargeError
        chunks.append(chunk)
    return b"".join(chunks)


def _error_code(payload: bytes) -> str | None:
    try:
        body = json.loads(payload)
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and len(code) <= 64 else None


def _status_error(status: int, headers: Mapping[str, str], payload: bytes) -> HttpStatusError:
    code = _error_code(payload)
    if status == 400 and code == "context_length_exceeded":
        return ContextWindowExceededError(status, headers, code)
    return HttpStatusError(status, headers, code)


# -- one session per event loop ------------------------------------------------------------------

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]] = (
    weakref.WeakKeyDictionary()
)


async def _keeper(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    # An async generator the loop finalizes in `shutdown_asyncgens()`: the session is closed
    # on the loop that owns it, before the loop closes, with no hook for the user to call.
    try:
        yield
    finally:
        await session.close()


async def _session() -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    entry = _sessions.get(loop)
    if entry is not None and not entry[0].closed:
        session: aiohttp.ClientSession = entry[0]
        return session
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1000, keepalive_timeout=30.0),
        timeout=aiohttp.ClientTimeout(total=None),  # the judge's own timeout bounds each call
        skip_auto_headers=("User-Agent",),
    )
    keeper = _keeper(session)
    await keeper.__anext__()
    _sessions[loop] = (session, keeper)
    return session


# -- the client ----------------------------------------------------------------------------------


class OpenAIChatClient:
    """POSTs chat completions to one OpenAI-compatible endpoint."""

    __slots__ = (
        "_base",
        "_body_options",
        "_extra_body",
        "_headers",
        "_key",
        "_model",
        "_org",
        "_proxies",
    )

    def __init__(self, model: str, options: Mapping[str, Any]) -> None:
        prefix = "openai/"
        self._model = model[len(prefix) :] if model.startswith(prefix) else model
        self._base = options.get("api_base") or options.get("base_url")
        self._key = options.get("api_key")
        self._org = options.get("organization")
        headers: dict[str, str] = {}
        for name in ("headers", "extra_headers"):
            extra = options.get(name)
            if isinstance(extra, Mapping):
                headers.update({str(k): str(v) for k, v in extra.items()})
        self._headers = headers
        extra_body = options.get("extra_body")
        self._extra_body = dict(extra_body) if isinstance(extra_body, Mapping) else {}
        self._body_options = {k: v for k, v in options.items() if k in BODY_OPTIONS}
        self._proxies: dict[str, str | None] = {}

    def _proxy(self, url: str) -> str | None:
        """The proxy the environment names for `url` (HTTPS_PROXY, else ALL_PROXY; NO_PROXY),
        as the openai SDK's httpx client honours it; worked out once per URL, not per
        request. Raises `UnsupportedProxyError` for a proxy that is not http(s)."""
        if url not in self._proxies:
            parts = urlsplit(url)
            proxies = urllib.request.getproxies_environment()
            bypass = urllib.request.proxy_bypass_environment(  # type: ignore[attr-defined]
                parts.hostname or "", proxies
            )
            named = None if bypass else proxies.get(parts.scheme) or proxies.get("all")
            self._proxies[url] = named
        proxy = self._proxies[url]
        if proxy is not None:
            scheme = urlsplit(proxy).scheme.lower()
            if scheme not in _PROXY_SCHEMES:
                raise UnsupportedProxyError(scheme or "schemeless")
        return proxy

    def base_url(self) -> str:
        """The API's base URL (`.../v1`), without a trailing slash."""
        # Read per call, like litellm does, so a variable set after construction counts.
        base = (
            self._base
            or os.environ.get("OPENAI_BASE_URL")
            or os.environ.get("OPENAI_API_BASE")
            or DEFAULT_BASE
        )
        return str(base).rstrip("/")

    def url(self) -> str:
        return f"{self.base_url()}/chat/completions"

    def api_key(self) -> str | None:
        key = self._key or os.environ.get("OPENAI_API_KEY")
        return key if isinstance(key, str) and key else None

    def _request_headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        headers.update(self.auth_headers())
        return headers

    def auth_headers(self) -> dict[str, str]:
        """The key, organization and configured headers every request to the API carries."""
        headers: dict[str, str] = {}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        organization = self._org or os.environ.get("OPENAI_ORGANIZATION")
        if organization:
            headers["OpenAI-Organization"] = str(organization)
        headers.update(self._headers)
        return headers

    def payload(self, messages: list[dict[str, str]], extra: Mapping[str, Any]) -> dict[str, Any]:
        """The chat-completions request body: a direct call's, and a batch input line's."""
        body: dict[str, Any] = {"model": self._model, "messages": messages}
        body.update(self._body_options)
        body.update(extra)
        body.update(self._extra_body)
        return body

    def body(self, messages: list[dict[str, str]], extra: Mapping[str, Any]) -> bytes:
        return json.dumps(self.payload(messages, extra), ensure_ascii=False).encode()

    def proxy_for(self, url: str) -> str | None:
        """The environment's proxy for `url` (see `_proxy`)."""
        return self._proxy(url)

    @contextlib.asynccontextmanager
    async def _posted(self, body: bytes) -> AsyncIterator[aiohttp.ClientResponse]:
        """The answer to `body` POSTed to the completions URL; a redirect is never followed (a
        3xx raises: the prompt goes to no other host, and no other host's answer is a verdict)."""
        session = await _session()
        url = self.url()
        async with session.post(
            url,
            data=body,
            headers=self._request_headers(),
            proxy=self._proxy(url),
            allow_redirects=False,
        ) as answer:
            if 300 <= answer.status < 400:
                raise _status_error(answer.status, answer.headers, b"")
            yield answer

    async def complete(self, body: bytes) -> dict[str, Any]:
        """The completion's JSON, or raise."""
        async with self._posted(body) as answer:
            payload = await _read_capped(answer)
            if answer.status >= 400:
                raise _status_error(answer.status, answer.headers, payload)
        parsed = json.loads(payload)  # JSONDecodeError: a malformed body
        if not isinstance(parsed, dict) or not isinstance(parsed.get("choices"), list):
            raise MalformedResponseError("the answer is not a chat completion")
        return parsed

    async def stream(self, body: bytes, state: StreamState) -> None:
        """Read a server-sent-event stream of chunks into `state`."""
        async with self._posted(body) as answer:
            if answer.status >= 400:
                raise _status_error(answer.status, answer.headers, await _read_capped(answer))
            size = 0
            async for line in answer.content:
                size += len(line)
                if size > MAX_RESPONSE_BYTES:
                    raise ResponseTooLargeError
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    return
                chunk = json.loads(data)
                if not isinstance(chunk, dict):
                    raise MalformedResponseError("a stream chunk is not a JSON object")
                if isinstance(chunk.get("error"), dict):
                    raise _status_error(500, answer.headers, data)
                state.add(chunk)
