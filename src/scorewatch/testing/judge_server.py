"""A loopback OpenAI-compatible chat-completions server whose answers each test scripts.

The server listens on 127.0.0.1 on a free port, in a background thread with its own event loop,
so it serves sync and async callers alike and keeps answering while the caller's loop is busy.
It speaks just enough HTTP/1.1 (keep-alive, Content-Length and chunked bodies, chunked SSE
replies) for the openai SDK that litellm drives, and answers in well under a millisecond.

A behaviour says what to do with one request: a `Reply` (text, usage, cost, finish reason,
delay, streamed when the request asks for it), an `HttpError` (status, `Retry-After`), a
`DropConnection` (close the socket without answering), a `MalformedBody` (a 200 that is not
JSON) or a `RawResponse` (any status, headers and bytes: redirects, compressed or endless
bodies). A plain string is a `Reply` with that text. A script is one behaviour (repeated for every
request), a sequence (consumed in order, then `default`), or a callable that receives the
request's JSON body and returns a behaviour.

What the server received is kept in `requests` (method, path, JSON body and header names). Header
values are never stored, so an API key sent as `Authorization` cannot end up in a test's output.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, TypeAlias

__all__ = [
    "Behaviour",
    "DropConnection",
    "HttpError",
    "JudgeScript",
    "LoopbackJudgeServer",
    "MalformedBody",
    "RawResponse",
    "ReceivedJudgeRequest",
    "Reply",
    "ToolCallReply",
]

_MAX_HEADER_BYTES = 1 << 20
_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})


@dataclass(frozen=True, slots=True)
class ToolCallReply:
    """A tool call the model asks for (an agent under test runs the tool, then calls again)."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str = "call_loopback"


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful chat completion.

    Usage defaults to 10 prompt / 20 completion tokens. `cached_tokens` and `reasoning_tokens`
    go into the OpenAI `*_tokens_details` blocks, `cache_creation_tokens` into
    `cache_creation_input_tokens` (as Anthropic reports it), `cost` into `usage.cost` (as
    providers that report a cost do). `usage` replaces the whole usage block; `include_usage=False`
    leaves it out. A streamed reply is sent in `chunk_size`-character pieces, `chunk_delay` apart;
    `drop_after_chunks=N` closes the connection after N chunks (a stream broken mid-answer).
    """

    text: str = ""
    finish_reason: str = "stop"
    prompt_tokens: int = 10
    completion_tokens: int = 20
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost: float | None = None
    usage: Mapping[str, Any] | None = None
    include_usage: bool = True
    delay: float = 0.0
    model: str | None = None
    response_id: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    chunk_size: int = 16
    chunk_delay: float = 0.0
    drop_after_chunks: int | None = None
    tool_calls: Sequence[ToolCallReply] = ()

    def tool_calls_block(self) -> list[dict[str, Any]]:
        return [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments),
                },
            }
            for call in self.tool_calls
        ]

    def usage_block(self) -> dict[str, Any] | None:
        if not self.include_usage:
            return None
        if self.usage is not None:
            return dict(self.usage)
        block: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached_tokens is not None:
            block["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if self.reasoning_tokens is not None:
            block["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        if self.cache_creation_tokens is not None:
            block["cache_creation_input_tokens"] = self.cache_creation_tokens
        if self.cost is not None:
            block["cost"] = self.cost
        return block


@dataclass(frozen=True, slots=True)
class HttpError:
    """An error status with an OpenAI-style error body (`{"error": {...}}`)."""

    status: int
    message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    retry_after: float | str | None = None
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def context_length_exceeded(cls) -> HttpError:
        """The 400 OpenAI sends when the prompt does not fit the model's context window."""
        return cls(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. Please reduce the length of the messages.",
            error_type="invalid_request_error",
            error_code="context_length_exceeded",
        )

    def body(self) -> dict[str, Any]:
        try:
            phrase = HTTPStatus(self.status).phrase
        except ValueError:
            phrase = "Error"
        return {
            "error": {
                "message": self.message or f"loopback judge: {phrase}",
                "type": self.error_type or "server_error",
                "param": None,
                "code": self.error_code,
            }
        }


@dataclass(frozen=True, slots=True)
class DropConnection:
    """Close the connection without answering, after `delay` seconds."""

    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class MalformedBody:
    """Answer with a body that is not valid JSON (or not the JSON the client expects)."""

    body: str = '{"id": "chatcmpl-malformed", "object": "chat.completion", "choices": [{"ind'
    status: int = 200
    content_type: str = "application/json"
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class RawResponse:
    """Any answer, byte for byte: `status`, `headers` as given and `body` (a redirect, a body
    gzip-compressed to a hundred times its size, ...). `endless=True` sends `body` over and
    over as chunks until the client hangs up."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    endless: bool = False
    delay: float = 0.0


Behaviour: TypeAlias = Reply | HttpError | DropConnection | MalformedBody | RawResponse | str
JudgeScript: TypeAlias = Behaviour | Sequence[Behaviour] | Callable[[dict[str, Any]], Behaviour]


@dataclass(frozen=True, slots=True)
class ReceivedJudgeRequest:
    """One request as the server saw it. Header values are not kept, only their names."""

    method: str
    path: str
    body: Any
    header_names: frozenset[str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return list(self.body["messages"])
        return []


_EXHAUSTED = HttpError(500, "loopback judge: the script has no behaviour left for this request")


class _Script:
    """The behaviours still to play, guarded for callers on other threads."""

    def __init__(self, script: JudgeScript | None, default: Behaviour | None) -> None:
        self._lock = threading.Lock()
        self._repeat: Behaviour | None = None
        self._queue: deque[Behaviour] = deque()
        self._function: Callable[[dict[str, Any]], Behaviour] | None = None
        self._default = default
        self.replace(script, default)

    def replace(self, script: JudgeScript | None, default: Behaviour | None) -> None:
        with self._lock:
            self._repeat, self._function, self._default = None, None, default
            self._queue = deque()
            if script is None:
                return
            if isinstance(
                script, Reply | HttpError | DropConnection | MalformedBody | RawResponse | str
            ):
                self._repeat = script
            elif callable(script):
                self._function = script
            else:
                self._queue.extend(script)

    def push(self, behaviours: Sequence[Behaviour]) -> None:
        with self._lock:
            self._repeat, self._function = None, None
            self._queue.extend(behaviours)

    def next(self, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            function = self._function
            if function is None:
                if self._queue:
                    return self._queue.popleft()
                if self._repeat is not None:
                    return self._repeat
                return self._default if self._default is not None else _EXHAUSTED
        return function(body)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)


class _BadRequest(Exception):
    pass


class LoopbackJudgeServer:
    """An OpenAI-compatible judge on `http://127.0.0.1:PORT/v1`, scripted per test.

    ```python
    with LoopbackJudgeServer([HttpError(429, retry_after=0), Reply('{"score": 1}')]) as server:
        judge = LiteLLMJudge("openai/loopback", api_base=server.base_url, api_key="sk-test")
    ```

    `with` / `async with` (or `start()` / `stop()`) serve from a background thread, for sync
    and async callers alike (measured on 2 cores: ~7,000 requests/s from 64 concurrent aiohttp
    clients). `await astart()` / `await astop()` serve from the running event loop instead, for
    a process that already runs one (the loop must not be blocked while it serves).
    """

    def __init__(
        self,
        script: JudgeScript | None = None,
        *,
        default: Behaviour | None = None,
        model: str = "loopback-judge",
        record_requests: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._script = _Script(script, default)
        self._model = model
        self._record = record_requests
        self._host = host
        self._requested_port = port
        self._port: int | None = None
        self._requests: list[ReceivedJudgeRequest] = []
        self._request_count = 0
        self._connection_count = 0
        self._counter_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._sequence = 0

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> LoopbackJudgeServer:
        """Serve from a background thread with its own event loop (for sync callers)."""
        if self._loop is not None:
            return self
        self._ready.clear()
        self._startup_error = None
        self._thread = threading.Thread(
            target=self._serve_forever, name="loopback-judge-server", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            raise RuntimeError("loopback judge server failed to start") from self._startup_error
        return self

    async def astart(self) -> LoopbackJudgeServer:
        """Serve from the running event loop, without a thread.

        The loop must keep running: a blocking call made from it (a sync HTTP client,
        `run_sync`) would wait for a server that cannot answer. Use `start()` for that.
        """
        if self._loop is not None:
            return self
        self._server = await self._open()
        self._loop = asyncio.get_running_loop()
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        if thread is None:
            raise RuntimeError("this server runs on an event loop: use `await server.astop()`")
        with contextlib.suppress(RuntimeError):  # the loop may already be closed
            closing = asyncio.run_coroutine_threadsafe(self._close(), loop)
            with contextlib.suppress(Exception):
                closing.result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None

    async def astop(self) -> None:
        if self._thread is not None:
            await asyncio.to_thread(self.stop)
            return
        if self._loop is not None:
            await self._close()
            self._loop = None

    def __enter__(self) -> LoopbackJudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> LoopbackJudgeServer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.astop()

    # --- what tests read and script ----------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the loopback judge server is not running")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    @property
    def requests(self) -> list[ReceivedJudgeRequest]:
        """Requests received so far (a copy), in arrival order."""
        with self._counter_lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        """How many HTTP requests arrived (counted even when `record_requests=False`)."""
        with self._counter_lock:
            return self._request_count

    @property
    def connection_count(self) -> int:
        """How many TCP connections were accepted (keep-alive clients reuse one)."""
        with self._counter_lock:
            return self._connection_count

    @property
    def remaining(self) -> int:
        """Scripted behaviours not played yet (sequence scripts only)."""
        return self._script.remaining

    def script(self, script: JudgeScript | None, *, default: Behaviour | None = None) -> None:
        """Replace the script (what the next requests get)."""
        self._script.replace(script, default)

    def push(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, after those already queued."""
        self._script.push(behaviours)

    def clear_requests(self) -> None:
        with self._counter_lock:
            self._requests.clear()
            self._request_count = 0

    # --- the server thread -----------------------------------------------------------------

    async def _open(self) -> asyncio.Server:
        server = await asyncio.start_server(
            self._handle_connection,
            self._host,
            self._requested_port,
            limit=_MAX_HEADER_BYTES,
            backlog=1024,
        )
        self._port = int(server.sockets[0].getsockname()[1])
        return server

    def _serve_forever(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            try:
                self._server = loop.run_until_complete(self._open())
                self._loop = loop
            except BaseException as error:  # surfaced to start()'s caller
                self._startup_error = error
                return
            finally:
                self._ready.set()
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
        self._port = None

    async def _handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        with self._counter_lock:
            self._connection_count += 1
        try:
            while True:
                keep_alive = await self._handle_one(reader, writer)
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection should close."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as error:
            if error.partial.strip():
                raise
            return False  # the client closed an idle keep-alive connection
        try:
            method, path, version, headers = _parse_head(head)
            if headers.get("expect", "").lower() == "100-continue":
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            raw_body = await _read_body(reader, headers)
        except _BadRequest as error:
            await _write_json(writer, 400, {"error": {"message": str(error)}}, keep_alive=False)
            return False
        keep_alive = _wants_keep_alive(version, headers)
        body: Any
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = None
        with self._counter_lock:
            self._request_count += 1
            if self._record:
                self._requests.append(
                    ReceivedJudgeRequest(method, path.split("?", 1)[0], body, frozenset(headers))
                )
        route = path.split("?", 1)[0]
        if method == "GET" and route in ("/v1/models", "/models"):
            listing = {"object": "list", "data": [{"id": self._model, "object": "model"}]}
            await _write_json(writer, 200, listing, keep_alive=keep_alive)
            return keep_alive
        extra = await self._other_route(method, path, headers, raw_body)
        if extra is not None:
            status, payload, content_type = extra
            await _write_response(
                writer, status, payload, content_type=content_type, keep_alive=keep_alive
            )
            return keep_alive
        if method != "POST" or route not in _CHAT_PATHS:
            missing = {"error": {"message": f"no route for {method} {route}", "type": "not_found"}}
            await _write_json(writer, 404, missing, keep_alive=keep_alive)
            return keep_alive
        request_body = body if isinstance(body, dict) else {}
        try:
            behaviour = self._script.next(request_body)
        except Exception as error:  # a bug in the test's script: answer, do not hang the client
            behaviour = HttpError(500, f"loopback judge: the script raised {type(error).__name__}")
        return await self._play(behaviour, request_body, writer, keep_alive)

    async def _other_route(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, str] | None:
        """A subclass's own routes (the Batch API stand-in's files and batches): the status,
        body and content type of the answer, or None for a route this server does not own."""
        return None

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """What this server answers a non-streamed chat-completions `body` with, as a status
        and a JSON body, following the script (a delay, a dropped connection or a raw answer
        play as a 500, for the Batch API stand-in, which answers lines, not connections)."""
        try:
            behaviour = self._script.next(body)
        except Exception as error:
            behaviour = HttpError(500, f"loopback judge: the script raised {type(error).__name__}")
        if isinstance(behaviour, str):
            behaviour = Reply(behaviour)
        if isinstance(behaviour, Reply):
            return 200, self._completion(behaviour, body)
        if isinstance(behaviour, HttpError):
            return behaviour.status, behaviour.body()
        return 500, HttpError(500, f"loopback judge: {type(behaviour).__name__}").body()

    async def _play(
        self,
        behaviour: Behaviour,
        request: dict[str, Any],
        writer: asyncio.StreamWriter,
        keep_alive: bool,
    ) -> bool:
        if isinstance(behaviour, str):
            behaviour = Reply(behaviour)
        if behaviour.delay > 0:
            await asyncio.sleep(behaviour.delay)
        if isinstance(behaviour, DropConnection):
            transport = writer.transport
            transport.abort()
            return False
        if isinstance(behaviour, HttpError):
            headers = dict(behaviour.headers)
            if behaviour.retry_after is not None:
                headers["Retry-After"] = _format_retry_after(behaviour.retry_after)
            await _write_json(
                writer, behaviour.status, behaviour.body(), keep_alive=keep_alive, headers=headers
            )
            return keep_alive
        if isinstance(behaviour, RawResponse):
            return await _write_raw(writer, behaviour, keep_alive)
        if isinstance(behaviour, MalformedBody):
            await _write_response(
                writer,
                behaviour.status,
                behaviour.body.encode(),
                content_type=behaviour.content_type,
                keep_alive=keep_alive,
            )
            return keep_alive
        if request.get("stream"):
            completed = await self._stream_reply(behaviour, request, writer)
            return keep_alive and completed
        await _write_json(
            writer,
            200,
            self._completion(behaviour, request),
            keep_alive=keep_alive,
            headers=behaviour.headers,
        )
        return keep_alive

    def _next_id(self) -> str:
        with self._counter_lock:
            self._sequence += 1
            return f"chatcmpl-loopback-{self._sequence}"

    def _model_of(self, reply: Reply, request: dict[str, Any]) -> str:
        if reply.model is not None:
            return reply.model
        requested = request.get("model")
        return requested if isinstance(requested, str) and requested else self._model

    def _completion(self, reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
        completion: dict[str, Any] = {
            "id": reply.response_id or self._next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model_of(reply, request),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
        }
        if reply.tool_calls:
            message = completion["choices"][0]["message"]
            message["tool_calls"] = reply.tool_calls_block()
            message["content"] = reply.text or None
        usage = reply.usage_block()
        if usage is not None:
            completion["usage"] = usage
        return completion

    async def _stream_reply(
        self, reply: Reply, request: dict[str, Any], writer: asyncio.StreamWriter
    ) -> bool:
        """Send the answer as SSE chunks; False when told to drop the connection midway."""
        head = _response_head(
            200,
            {
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "Transfer-Encoding": "chunked",
                **reply.headers,
            },
            keep_alive=True,
        )
        writer.write(head)
        response_id = reply.response_id or self._next_id()
        base = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self._model_of(reply, request),
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            return {**base, "choices": [choice]}

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""}, None)]
        size = max(1, reply.chunk_size)
        events.extend(
            chunk({"content": reply.text[start : start + size]}, None)
            for start in range(0, len(reply.text), size)
        )
        events.append(chunk({}, reply.finish_reason))
        options = request.get("stream_options")
        usage = reply.usage_block()
        if isinstance(options, dict) and options.get("include_usage") and usage is not None:
            events.append({**base, "choices": [], "usage": usage})
        for sent, event in enumerate(events):
            if reply.drop_after_chunks is not None and sent >= reply.drop_after_chunks:
                await writer.drain()
                writer.transport.abort()
                return False
            _write_chunk(writer, b"data: " + json.dumps(event).encode() + b"\n\n")
            if reply.chunk_delay > 0:
                await writer.drain()
                await asyncio.sleep(reply.chunk_delay)
        _write_chunk(writer, b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise _BadRequest("malformed request line")
    method, path, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequest("malformed header line")
        headers[name.strip().lower()] = value.strip()
    return method.upper(), path, version.upper(), headers


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as error:
                raise _BadRequest("malformed chunk size") from error
            if size == 0:
                # Trailers end with an empty line.
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length_text = headers.get("content-length")
    if not length_text:
        return b""
    try:
        length = int(length_text)
    except ValueError as error:
        raise _BadRequest("malformed Content-Length") from error
    return await reader.readexactly(length) if length > 0 else b""


def _wants_keep_alive(version: str, headers: Mapping[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    if version == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


def _format_retry_after(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _response_head(status: int, headers: Mapping[str, str], *, keep_alive: bool) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    lines = [f"HTTP/1.1 {status} {phrase}"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _write_response(
    writer: asyncio.StreamWriter,
    status: int,
    payload: bytes,
    *,
    content_type: str,
    keep_alive: bool,
    headers: Mapping[str, str] | None = None,
) -> None:
    all_headers = {"Content-Type": content_type, "Content-Length": str(len(payload))}
    all_headers.update(headers or {})
    writer.write(_response_head(status, all_headers, keep_alive=keep_alive) + payload)
    await writer.drain()


async def _write_json(
    writer: asyncio.StreamWriter,
    status: int,
    document: Any,
    *,
    keep_alive: bool,
    headers: Mapping[str, str] | None = None,
) -> None:
    payload = json.dumps(document).encode()
    await _write_response(
        writer,
        status,
        payload,
        content_type="application/json",
        keep_alive=keep_alive,
        headers=headers,
    )


async def _write_raw(writer: asyncio.StreamWriter, answer: RawResponse, keep_alive: bool) -> bool:
    """Send `answer`; False when the connection is to close (always, after an endless one)."""
    if not answer.endless:
        headers = {"Content-Length": str(len(answer.body)), **answer.headers}
        writer.write(_response_head(answer.status, headers, keep_alive=keep_alive) + answer.body)
        await writer.drain()
        return keep_alive
    headers = {**answer.headers, "Transfer-Encoding": "chunked"}
    writer.write(_response_head(answer.status, headers, keep_alive=False))
    with contextlib.suppress(ConnectionError):
        while not writer.transport.is_closing():
            _write_chunk(writer, answer.body)
            await writer.drain()
    return False


def _write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
