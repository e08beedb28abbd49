"""The loopback OpenAI-compatible judge server, spoken to over plain HTTP (httpx)."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import pytest

from scorewatch.testing import (
    DropConnection,
    HttpError,
    LoopbackJudgeServer,
    MalformedBody,
    Reply,
)

pytestmark = pytest.mark.integration

SENTINEL = "sk-sentinel-server-0c4f7d"
CHAT = {"model": "loopback", "messages": [{"role": "user", "content": "hi"}]}


def post(server: LoopbackJudgeServer, body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/chat/completions",
        json=body or CHAT,
        headers={"Authorization": f"Bearer {SENTINEL}"},
        timeout=5,
    )


def test_reply_is_an_openai_chat_completion_with_the_scripted_usage() -> None:
    reply = Reply(
        '{"score": 0.5}',
        prompt_tokens=7,
        completion_tokens=3,
        cached_tokens=4,
        reasoning_tokens=2,
        cache_creation_tokens=1,
        cost=0.125,
        response_id="chatcmpl-fixed",
    )
    with LoopbackJudgeServer(reply) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        body = post(server).json()
    assert body["id"] == "chatcmpl-fixed"
    assert body["object"] == "chat.completion"
    assert body["model"] == "loopback"  # echoes the requested model
    assert body["choices"][0]["message"] == {"role": "assistant", "content": '{"score": 0.5}'}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "total_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 2},
        "cache_creation_input_tokens": 1,
        "cost": 0.125,
    }


def test_usage_can_be_replaced_or_left_out() -> None:
    with LoopbackJudgeServer(
        [Reply("a", usage={"prompt_tokens": 1}), Reply("b", include_usage=False)]
    ) as server:
        assert post(server).json()["usage"] == {"prompt_tokens": 1}
        assert "usage" not in post(server).json()


def test_requests_are_recorded_without_header_values() -> None:
    with LoopbackJudgeServer("ok") as server:
        post(server, {**CHAT, "temperature": 0})
        received = server.requests
    assert len(received) == 1
    request = received[0]
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.body["temperature"] == 0
    assert request.messages == CHAT["messages"]
    assert "authorization" in request.header_names
    assert SENTINEL not in repr(received)


def test_a_sequence_plays_in_order_then_the_default() -> None:
    with LoopbackJudgeServer(["one", "two"], default=Reply("fallback")) as server:
        texts = [post(server).json()["choices"][0]["message"]["content"] for _ in range(4)]
        assert server.remaining == 0
    assert texts == ["one", "two", "fallback", "fallback"]


def test_an_exhausted_script_without_default_answers_500() -> None:
    with LoopbackJudgeServer(["only"]) as server:
        assert post(server).status_code == 200
        response = post(server)
    assert response.status_code == 500
    assert "no behaviour left" in response.json()["error"]["message"]


def test_push_and_script_change_the_behaviour_mid_test() -> None:
    with LoopbackJudgeServer("first") as server:
        assert post(server).json()["choices"][0]["message"]["content"] == "first"
        server.push("pushed")
        assert post(server).json()["choices"][0]["message"]["content"] == "pushed"
        server.script(HttpError(503))
        assert post(server).status_code == 503
        assert post(server).status_code == 503


def test_a_callable_script_sees_the_request_body() -> None:
    def answer(body: dict[str, Any]) -> Reply:
        return Reply(body["messages"][-1]["content"].upper(), finish_reason="length")

    with LoopbackJudgeServer(answer) as server:
        body = post(server, {**CHAT, "messages": [{"role": "user", "content": "echo me"}]}).json()
    assert body["choices"][0]["message"]["content"] == "ECHO ME"
    assert body["choices"][0]["finish_reason"] == "length"


def test_error_statuses_carry_an_openai_error_body_and_retry_after() -> None:
    with LoopbackJudgeServer(
        [HttpError(429, retry_after=2), HttpError(503, retry_after=0.25), HttpError(401)]
    ) as server:
        limited, unavailable, unauthorized = post(server), post(server), post(server)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["message"] == "loopback judge: Too Many Requests"
    assert unavailable.status_code == 503
    assert unavailable.headers["retry-after"] == "0.25"
    assert unauthorized.status_code == 401
    assert "retry-after" not in unauthorized.headers


def test_context_length_error_looks_like_openai() -> None:
    with LoopbackJudgeServer(HttpError.context_length_exceeded()) as server:
        response = post(server)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "context_length_exceeded"
    assert "maximum context length" in response.json()["error"]["message"]


def test_drop_connection_closes_without_an_answer() -> None:
    with LoopbackJudgeServer([DropConnection(), "after"]) as server:
        with pytest.raises(httpx.TransportError):
            post(server)
        # The server keeps serving other connections.
        assert post(server).json()["choices"][0]["message"]["content"] == "after"
        assert server.request_count == 2


def test_malformed_body_is_not_json() -> None:
    with LoopbackJudgeServer(MalformedBody()) as server:
        response = post(server)
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.text)


def test_streaming_sends_sse_chunks_and_a_final_usage_chunk() -> None:
    text = "a streamed answer that spans several chunks"
    with LoopbackJudgeServer(Reply(text, chunk_size=5, cost=0.5)) as server:
        body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
        with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
            assert response.headers["content-type"] == "text/event-stream"
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    content = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert content == text
    finishes = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    assert finishes[-1] == "stop"
    assert events[-1]["choices"] == []
    assert events[-1]["usage"]["cost"] == 0.5
    assert len(events) >= len(text) // 5 + 2


def test_streaming_without_include_usage_sends_no_usage_chunk() -> None:
    with LoopbackJudgeServer(Reply("x")) as server:
        body = {**CHAT, "stream": True}
        with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
            events = [line for line in response.iter_lines() if line.startswith("data: {")]
    assert all('"usage"' not in event for event in events)


def test_keep_alive_serves_many_requests_on_one_connection() -> None:
    with LoopbackJudgeServer("ok") as server, httpx.Client(base_url=server.base_url) as client:
        for _ in range(20):
            assert client.post("/chat/completions", json=CHAT).status_code == 200
        assert server.request_count == 20


def test_chunked_request_bodies_are_read() -> None:
    def body_chunks() -> Any:
        data = json.dumps(CHAT).encode()
        yield data[:10]
        yield data[10:]

    with LoopbackJudgeServer("ok") as server:
        response = httpx.post(f"{server.base_url}/chat/completions", content=body_chunks())
        assert response.status_code == 200
        assert server.requests[0].body == CHAT


def test_unknown_paths_answer_404_and_models_are_listed() -> None:
    with LoopbackJudgeServer("ok", model="judge-x") as server:
        assert httpx.get(f"{server.base_url}/nothing").status_code == 404
        listing = httpx.get(f"{server.base_url}/models").json()
    assert listing["data"][0]["id"] == "judge-x"


def test_stop_releases_the_port() -> None:
    server = LoopbackJudgeServer("ok").start()
    port = server.port
    server.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    with pytest.raises(RuntimeError):
        _ = server.base_url


def test_stop_does_not_wait_for_a_slow_reply() -> None:
    server = LoopbackJudgeServer(Reply("late", delay=30)).start()

    def slow_call() -> None:
        with pytest.raises(httpx.TransportError):
            post(server)

    import threading

    caller = threading.Thread(target=slow_call)
    caller.start()
    while server.request_count == 0:
        threading.Event().wait(0.005)
    server.stop()
    caller.join(timeout=10)
    assert not caller.is_alive()


async def test_async_context_manager_and_concurrent_clients() -> None:
    # aiohttp is the transport litellm uses (and a litellm dependency).
    import aiohttp

    def echo(body: dict[str, Any]) -> Reply:
        return Reply(body["messages"][0]["content"])

    clients, per_client = 64, 20
    async with LoopbackJudgeServer(echo, record_requests=False) as server:
        url = f"{server.base_url}/chat/completions"

        async def client(number: int) -> list[str]:
            async with aiohttp.ClientSession() as session:
                texts = []
                for index in range(per_client):
                    body = {**CHAT, "messages": [{"role": "user", "content": f"{number}-{index}"}]}
                    async with session.post(url, json=body) as response:
                        texts.append((await response.json())["choices"][0]["message"]["content"])
                return texts

        results = await asyncio.gather(*(client(n) for n in range(clients)))
        assert server.request_count == clients * per_client
        assert server.requests == []  # record_requests=False keeps nothing
    for number, texts in enumerate(results):
        assert texts == [f"{number}-{index}" for index in range(per_client)]


async def test_astart_serves_from_the_running_loop() -> None:
    server = await LoopbackJudgeServer(["first", HttpError(503)]).astart()
    try:
        with pytest.raises(RuntimeError, match="astop"):
            server.stop()
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            first = await client.post("/chat/completions", json=CHAT)
            second = await client.post("/chat/completions", json=CHAT)
        assert first.json()["choices"][0]["message"]["content"] == "first"
        assert second.status_code == 503
    finally:
        port = server.port
        await server.astop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_a_script_that_raises_answers_500() -> None:
    def broken(body: dict[str, Any]) -> Reply:
        raise KeyError("oops")

    with LoopbackJudgeServer(broken) as server:
        response = post(server)
    assert response.status_code == 500
    assert "KeyError" in response.json()["error"]["message"]


def test_expect_100_continue_is_honoured() -> None:
    with LoopbackJudgeServer("ok") as server:
        data = json.dumps(CHAT).encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
            head = (
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            )
            raw.sendall(head.encode())
            assert raw.recv(64).startswith(b"HTTP/1.1 100 Continue")
            raw.sendall(data)
            answer = b""
            while b'"content": "ok"' not in answer:
                chunk = raw.recv(4096)
                assert chunk, "connection closed before the answer"
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 OK")
