"""`scorewatch serve` with `[cache]`: a repeated call reuses the verdict, the stored row and
/metrics say so, and a scorer marked `cache = false` is judged every time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from scorewatch.testing import LoopbackJudgeServer, Reply
from serve_support import ServeProcess, serving_with_judge

pytestmark = pytest.mark.e2e

CONFIG = """\
{judge}
[cache]
max_bytes = 1048576

[[scorers]]
id = "judged"
factory = "sw_test_scorers:make_judged_scorer"

[[scorers]]
id = "fresh"
factory = "sw_test_scorers:make_judged_scorer"
cache = false

[sinks]
sqlite = "scores.db"
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServeProcess, LoopbackJudgeServer]]:
    with serving_with_judge(tmp_path, CONFIG, Reply('{"score": 0.8}')) as serving:
        yield serving


def test_a_repeated_call_reuses_the_verdict(
    served: tuple[ServeProcess, LoopbackJudgeServer],
) -> None:
    process, judge = served
    body = {"input": "question", "output": "the same answer", "target": "agent-a"}
    with httpx.Client(base_url=process.url, timeout=30) as client:
        # Two calls of two traces whose judge prompts are the same.
        for trace_id in ("0af7651916cd43dd8448eb211c80319c", "1bf7651916cd43dd8448eb211c80319d"):
            call = {**body, "trace_id": trace_id, "scorers": ["judged", "fresh"]}
            response = client.post("/v1/scores", params={"wait": "true"}, json=call)
            assert response.status_code == 200, response.text
            assert {r["score"] for r in response.json()["results"]} == {0.8}
        assert judge.request_count == 3  # judged once, fresh twice
        rows = client.get("/v1/scores", params={"scorer": "judged"}).json()["scores"]
        executions = [
            execution
            for row in rows
            for record in row["judge"].values()
            for execution in record["executions"]
        ]
        assert sorted(bool(e.get("cached")) for e in executions) == [False, True]
        fresh = client.get("/v1/scores", params={"scorer": "fresh"}).json()["scores"]
        assert not any(
            e.get("cached") for row in fresh for r in row["judge"].values() for e in r["executions"]
        )
        metrics = client.get("/metrics").text
    hits = [
        line
        for line in metrics.splitlines()
        if line.startswith("scorewatch_judge_cache_lookups_total{")
        and 'scorewatch_judge_cache_result="hit"' in line
    ]
    assert len(hits) == 1 and hits[0].endswith(" 1.0") and 'evaluation_name="judged"' in hits[0]
