"""A call's conversation id, from `LiveScoring.submit` to the stored row's `threadId`, and from
serve's `POST /v1/scores` request to its call, in a real SQLite sink."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import scorewatch as sw
from scorewatch.live import SqliteSink
from scorewatch.scorers.keyword_coverage import create_keyword_coverage_scorer
from scorewatch.server.http.models import ScoreRequest

pytestmark = pytest.mark.integration


async def test_a_submitted_calls_conversation_is_the_rows_thread(tmp_path: Path) -> None:
    database = tmp_path / "scores.db"
    live = sw.LiveScoring(
        {"keywords": create_keyword_coverage_scorer()},
        sinks=[SqliteSink(str(database))],
        drain_on_exit=False,
    )
    live.submit(input="red shoes", output="red shoes, size 38", conversation_id="ann-42")
    live.submit(input="order 7", output="shipped")
    assert await live.drain(30)
    await live.aclose()
    with sqlite3.connect(database) as db:
        threads = sorted(str(row[0]) for row in db.execute("SELECT threadId FROM mastra_scorers"))
    assert threads == ["None", "ann-42"]


def test_a_score_request_carries_its_conversation_to_the_call() -> None:
    request = ScoreRequest(input="q", output="a", target="bot", conversation_id="ann-42")
    assert request.to_call().conversation_id == "ann-42"
    assert "conversation_id" in ScoreRequest.ID_FIELDS  # checked for NUL and surrogates
