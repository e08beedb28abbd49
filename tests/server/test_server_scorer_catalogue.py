"""Serve reads the prebuilt-scorer catalogue the CLI reads: a `[[scorers]] kind` is found the
way `scorewatch eval --scorer` finds a name (short name or scorer id), and `GET /v1/scorers`
describes a prebuilt scorer with its card, as `scorewatch scorers` does."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from scorewatch.scorers.registry import PREBUILT
from scorewatch.server.config.file import ServeConfig
from scorewatch.server.http.app import build_service, create_app, shutdown_service

pytestmark = pytest.mark.integration


async def test_serve_lists_prebuilt_scorers_by_their_cards(tmp_path: Path) -> None:
    document = {
        "judge": {"model": "openai/loopback-judge"},
        "scorers": [
            {"id": "faithful", "kind": "faithfulness"},
            {"id": "complete", "kind": "Completeness"},
            {
                "id": "tools",
                "kind": "llm-tool-call-accuracy-scorer",  # the scorer's id, as the CLI takes it
                "options": {"available_tools": {"lookup": "finds an order"}},
            },
        ],
        "sinks": {"sqlite": False},
        "telemetry": {"prometheus": False, "otlp": False},
    }
    service = build_service(ServeConfig.from_mapping(document, base_dir=tmp_path))
    transport = httpx.ASGITransport(app=create_app(service))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://sw") as client:
            answer = await client.get("/v1/scorers")
    finally:
        await shutdown_service(service)
    assert answer.status_code == 200, answer.text
    listed = {scorer["id"]: scorer for scorer in answer.json()["scorers"]}
    for scorer_id, name in (
        ("faithful", "faithfulness"),
        ("complete", "completeness"),
        ("tools", "tool-call-accuracy-llm"),
    ):
        card = PREBUILT[name]
        assert listed[scorer_id]["name"] == card.scorer_name
        assert listed[scorer_id]["description"] == card.description
        assert listed[scorer_id]["direction"] == card.direction
        assert listed[scorer_id]["has_judge"] == (card.judge_calls > 0)
    assert listed["tools"]["source"] == "kind:llm-tool-call-accuracy-scorer"
