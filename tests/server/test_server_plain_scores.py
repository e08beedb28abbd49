"""The plain `POST /v1/scores` answered by the guard (`routes/score_intake.py`) gives what the
FastAPI route gives: the same status, body and headers for accepted and refused requests alike,
and nothing decided or counted when it leaves a request to the route."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scorewatch.core.call import AgentCall
from scorewatch.server.config.file import ServeConfig
from scorewatch.server.http.app import build_service, create_app, shutdown_service
from scorewatch.server.http.routes.score_intake import answer_plain_score
from scorewatch.server.http.state import ServiceState
from scorewatch.server.intake.admission import request_digest

pytestmark = pytest.mark.integration

GOOD = b'{"input": "q", "output": "a", "target": "bot", "trace_id": "ab12", "span_id": "cd"}'

# Bodies that differ in how they fail (or pass): each is sent to the guard's path and to the
# route (through `?wait=false`), and both answers must be the same.
BODIES: list[bytes] = [
    GOOD,
    b'{"input": "q", "output": "a", "target": "bot"}',
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["similar"]}',
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["nope"]}',
    b'{"input": "q", "output": "a"}',
    b'{"input": "q", "output": "a", "target": "bot", "colour": 1}',
    b'{"input": NaN, "output": "a", "target": "bot"}',
    b'{"input": 1e400, "output": "a", "target": "bot"}',
    b'{"input": "q", "output": "a", "target": "b\\u0000t"}',
    b'{"input": "\\ud800 lone", "output": "a", "target": "bot", "run_id": "r1"}',
    b'\xef\xbb\xbf{"input": "q", "output": "a", "target": "bot", "run_id": "r2"}',
    b'{"input": 1' + b"1" * 5000 + b', "output": "a", "target": "bot"}',
    b'{"input": "q", "output": "a", "target": "bot"} trailing',
    b'{"input": "q", "output": "a", "target": ' + b'"' + b"t" * 300 + b'"}',
    b"[1, 2]",
    b"",
]
# Bodies 3 to 15: what the guard leaves to the route (unknown scorer, invalid or refused).
LEFT_TO_THE_ROUTE = BODIES[3:]
BODIES += [
    # What the checks of identifiers and numbers skip or scan (`check_values`).
    b'{"input": {"a": [1, NaN]}, "output": "a", "target": "bot"}',
    b'{"input": "q", "output": [1e999], "target": "bot"}',
    b'{"input": "q", "output": {"n": 1E+308}, "target": "bot", "run_id": "r3"}',
    b'{"input": "q", "output": "a", "target": "bot", "metadata": {"n": 1.5, "s": "\\u0000"}}',
    b'{"input": ["\\u0000", 7], "output": "a", "target": "bot", "run_id": "r4"}',
    b'{"input": "q", "output": "a", "target": "b\\\\u0000t", "run_id": "r5"}',
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["similar", "sim\\u0000"]}',
    b'{"input": "q", "output": "a", "target": "bot", "trace_id": "\\ud83d\\ude00"}',
    b'{"input": "q", "output": "a", "target": "bot", "conversation_id": "c\\ud800"}',
    b'{"input": 12, "output": 1.5, "target": "bot", "ground_truth": true, "run_id": "r6"}',
    b'{"input": "Infinity", "output": "NaN", "target": "bot", "run_id": "r7"}',
    b'{"input": "q", "output": "a", "target": "bot", "span_id": "\\u0041"}',
    # Answers made once per set of skipped decisions (nothing accepted), and the others.
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["rare"]}',
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["rare"], "trace_id": "t9"}',
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["rare", "rare"]}',
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["rare", "similar"]}',
    b'{"input": "q", "output": "a", "target": "bot", "scorers": ["similar", "similar"]}',
    # Hostile shapes: deep nesting, a huge number of digits, a lone brace, invalid UTF-8.
    b'{"input": ' + b"[" * 200 + b"]" * 200 + b', "output": "a", "target": "bot"}',
    b'{"input": ' + b"9" * 400 + b', "output": "a", "target": "bot"}',
    b"{",
    b'{"input": "\xff", "output": "a", "target": "bot"}',
    b'{"input": "q", "output": "a", "target": "bot", "trace_id": "\x00"}',
]


def _document(tmp_path: Path) -> dict[str, Any]:
    return {
        "scorers": [
            {"id": "similar", "kind": "content-similarity", "sampling": 1.0},
            {"id": "rare", "kind": "content-similarity", "sampling": 0.0},
        ],
        "sinks": {"sqlite": str(tmp_path / "scores.db")},
        "telemetry": {"prometheus": False, "otlp": False},
    }


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[ServiceState]:
    state = build_service(ServeConfig.from_mapping(_document(tmp_path), base_dir=tmp_path))
    try:
        yield state
    finally:
        await shutdown_service(state)


async def test_guard_and_route_answer_alike(service: ServiceState) -> None:
    transport = httpx.ASGITransport(app=create_app(service))
    headers = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(transport=transport, base_url="http://sw") as client:
        for body in BODIES:
            plain = await client.post("/v1/scores", content=body, headers=headers)
            routed = await client.post("/v1/scores?wait=false", content=body, headers=headers)
            assert plain.status_code == routed.status_code, (body[:60], plain.text, routed.text)
            assert plain.json() == routed.json(), body[:60]
            assert plain.headers["content-type"] == routed.headers["content-type"]
            assert plain.headers.get("retry-after") == routed.headers.get("retry-after")
        for content_type in (
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/problem+json",
            "text/plain",
            "application/jsonx",
        ):
            # The guard remembers what each Content-Type says: asked twice, it says the same.
            for _ in range(2):
                typed = {"Content-Type": content_type}
                plain = await client.post("/v1/scores", content=GOOD, headers=typed)
                routed = await client.post("/v1/scores?wait=false", content=GOOD, headers=typed)
                assert plain.status_code == routed.status_code, content_type
                assert plain.json() == routed.json(), content_type
    # Every body was decided twice or not at all: the guard's refusals counted nothing extra.
    stats = service.stats()
    assert stats["sampled"] % 2 == 0 and stats["not_sampled"] % 2 == 0
    assert stats["sampled"] > 0 and stats["not_sampled"] > 0


async def test_the_guard_answers_a_plain_request_and_leaves_the_rest(
    service: ServiceState,
) -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    assert await answer_plain_score(service, GOOD, send)
    assert sent[0]["status"] == 202
    assert b'"accepted":[{"scorer":"similar","run_id":"scoring-similar-ab12-cd-' in sent[1]["body"]
    # Sent without a run id: its call is built once with a made-up one, which names nothing.
    sent.clear()
    assert await answer_plain_score(service, BODIES[1], send)
    sent_call = AgentCall(input="q", output="a", target="bot")
    run_id = f"scoring-similar--bot-{request_digest(sent_call.to_dict())}"
    assert sent[1]["body"] == (
        b'{"accepted":[{"scorer":"similar","run_id":"' + run_id.encode() + b'"}],'
        b'"skipped":[{"scorer":"rare","decision":"not_sampled"}]}'
    )
    before = service.stats()
    sent.clear()
    for body in LEFT_TO_THE_ROUTE:
        assert not await answer_plain_score(service, body, send), body[:60]
    assert sent == []
    assert service.stats() == before
