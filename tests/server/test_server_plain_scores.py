"""The plain `POST /v1/scores` answered by the guard (`routes/score_intake.py`) gives what the
FastAPI route gives: the same status, body and headers for accepted and refused requests alike,
and nothing decided or counted when it leaves a request to the route."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scorewatch.server.config.file import ServeConfig
from scorewatch.server.http.app import build_service, create_app, shutdown_service
from scorewatch.server.http.routes.score_intake import answer_plain_score
from scorewatch.server.http.state import ServiceState

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
    before = service.stats()
    sent.clear()
    for body in BODIES[3:]:
        assert not await answer_plain_score(service, body, send), body[:60]
    assert sent == []
    assert service.stats() == before
