"""Fixtures of the judge transport tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scorewatch.testing import LoopbackJudgeServer


@pytest.fixture
def server() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer() as running:
        yield running


@pytest.fixture(params=["openai_http", "litellm"])
def transport(request: pytest.FixtureRequest) -> str:
    """Every test that calls the server runs on both paths (scorewatch's own client and
    litellm): the record must not differ."""
    return str(request.param)
