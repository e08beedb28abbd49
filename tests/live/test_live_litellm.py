"""The litellm callback scores completions made against the loopback judge server, and never
the judge's own completions."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from live_support import Collected, judged_scorer
from scorewatch.judge.litellm_judge import LiteLLMJudge
from scorewatch.live import LiveScoring
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.integration

SRC = str(Path(__file__).resolve().parents[2] / "src")
TESTS = str(Path(__file__).resolve().parents[1])
AGENT_ANSWER = "Paris is the capital of France."


def answer(body: dict[str, Any]) -> Reply:
    if body.get("model") == "judge-model":
        return Reply('{"score": 0.9}')
    return Reply(AGENT_ANSWER)


@pytest.fixture
def server() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(answer) as running:
        yield running


@pytest.fixture
def litellm_module() -> Iterator[Any]:
    import litellm

    # litellm copies `callbacks` into its own success/failure lists: restore all of them.
    names = [
        "callbacks",
        "success_callback",
        "_async_success_callback",
        "failure_callback",
        "_async_failure_callback",
    ]
    saved = {name: list(getattr(litellm, name)) for name in names}
    yield litellm
    for name, value in saved.items():
        setattr(litellm, name, value)


def live_scoring(server: LoopbackJudgeServer) -> tuple[LiveScoring, Collected]:
    # The judge itself goes through litellm to the same server: its completions must not be
    # taken for agent traffic (that would score the judge, forever). (The default fast path
    # never reaches litellm's callbacks; litellm is forced here to keep the case covered.)
    judge = LiteLLMJudge(
        "openai/judge-model",
        api_base=server.base_url,
        api_key="sk-test",
        max_retries=0,
        transport="litellm",
    )
    collected = Collected()
    live = LiveScoring(
        {"quality": judged_scorer(judge)}, sinks=[collected.sink()], drain_on_exit=False
    )
    return live, collected


def agent_arguments(server: LoopbackJudgeServer, question: str) -> dict[str, Any]:
    return {
        "model": "openai/agent-model",
        "messages": [{"role": "user", "content": question}],
        "api_base": server.base_url,
        "api_key": "sk-test",
        "max_retries": 0,
    }


async def wait_for_submissions(live: LiveScoring, count: int) -> None:
    # litellm reports success from a task or thread of its own, after the call has returned.
    for _ in range(500):
        if live.stats()["sampled"] >= count:
            return
        await asyncio.sleep(0.01)


async def test_async_completions_are_scored_once_each(
    server: LoopbackJudgeServer, litellm_module: Any
) -> None:
    live, collected = live_scoring(server)
    litellm_module.callbacks = [*litellm_module.callbacks, live.litellm_callback(target="geo-bot")]
    questions = ["Capital of France?", "Capital of Italy?", "Capital of Spain?"]
    agent_ids = set()
    for question in questions:
        response = await litellm_module.acompletion(**agent_arguments(server, question))
        assert response.choices[0].message.content == AGENT_ANSWER
        agent_ids.add(response.id)
    await wait_for_submissions(live, 3)
    assert await live.drain(30)
    await asyncio.sleep(0.2)  # a judge completion wrongly reported would be submitted by now
    stats = live.stats()
    assert stats["sampled"] == 3 and stats["scored"] == 3
    assert sorted(r.call.input[0]["content"] for r in collected.results) == sorted(questions)
    assert {r.call.output for r in collected.results} == {AGENT_ANSWER}
    assert {r.call.target for r in collected.results} == {"geo-bot"}
    assert {r.score for r in collected.results} == {0.9}
    # Each call carries its completion's id (the evaluation event's gen_ai.response.id).
    assert {(r.call.metadata or {}).get("response_id") for r in collected.results} == agent_ids
    models = [request.body.get("model") for request in server.requests]
    assert models.count("agent-model") == 3 and models.count("judge-model") == 3
    await live.aclose()


def test_sync_completions_are_scored_once_by_each_live_scoring(
    server: LoopbackJudgeServer, litellm_module: Any
) -> None:
    live, collected = live_scoring(server)
    other, other_collected = live_scoring(server)
    litellm_module.callbacks = [
        *litellm_module.callbacks,
        live.litellm_callback(target="geo-bot"),
        other.litellm_callback(target="other-bot"),  # a second callback is not skipped
    ]
    response = litellm_module.completion(**agent_arguments(server, "Capital of Peru?"))
    assert response.choices[0].message.content == AGENT_ANSWER
    for _ in range(500):
        if live.stats()["sampled"] and other.stats()["sampled"]:
            break
        time.sleep(0.01)
    assert live.drain_sync(30) and other.drain_sync(30)
    time.sleep(0.2)
    assert live.stats()["sampled"] == 1 and live.stats()["scored"] == 1
    assert other.stats()["sampled"] == 1 and other.stats()["scored"] == 1
    (result,) = collected.results
    assert result.call.input == [{"role": "user", "content": "Capital of Peru?"}]
    assert result.call.run_id  # litellm's call id
    assert other_collected.results[0].call.target == "other-bot"
    live.close()
    other.close()


async def test_streamed_completions_are_scored_with_the_whole_text(
    server: LoopbackJudgeServer, litellm_module: Any
) -> None:
    live, collected = live_scoring(server)
    litellm_module.callbacks = [*litellm_module.callbacks, live.litellm_callback(target="geo-bot")]
    stream = await litellm_module.acompletion(
        **agent_arguments(server, "Capital of Chile?"), stream=True
    )
    pieces = [chunk.choices[0].delta.content or "" async for chunk in stream]
    assert "".join(pieces) == AGENT_ANSWER
    await wait_for_submissions(live, 1)
    assert await live.drain(30)
    await asyncio.sleep(0.2)
    assert live.stats()["sampled"] == 1 and live.stats()["scored"] == 1
    (result,) = collected.results
    assert result.call.output == AGENT_ANSWER
    await live.aclose()


EXIT_CHILD = """
import asyncio, sys
from live_support import judged_scorer
from scorewatch.judge.litellm_judge import LiteLLMJudge
from scorewatch.live import LiveScoring, SqliteSink

judge = LiteLLMJudge("openai/judge-model", api_base=sys.argv[2], api_key="sk-test",
                     max_retries=0)
live = LiveScoring({"quality": judged_scorer(judge)}, max_concurrency=4,
                   sinks=[SqliteSink(sys.argv[1])])

async def main():
    import litellm  # loaded before the calls start, as in a running service
    for i in range(12):
        live.submit(input=i, output="answer", target="bot")
    await asyncio.sleep(0.05)  # runs are in flight on this loop when it ends

asyncio.run(main())
print("exiting with", live.stats()["scored"], "scored", flush=True)
"""


def test_litellm_judged_runs_still_finish_at_interpreter_exit(tmp_path: Path) -> None:
    """At exit, runs left by a finished asyncio.run are drained before concurrent.futures
    stops accepting work (litellm needs an executor)."""
    script = tmp_path / "child.py"
    script.write_text(EXIT_CHILD)
    db = tmp_path / "scores.db"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([SRC, TESTS]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    slow = Reply('{"score": 0.9}', delay=0.1)
    with LoopbackJudgeServer(lambda body: slow) as judge_server:
        done = subprocess.run(
            [sys.executable, str(script), str(db), judge_server.base_url],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    scored_before_exit = int(done.stdout.split("exiting with")[1].split()[0])
    assert scored_before_exit < 12  # the rest was left to the exit drain
    with sqlite3.connect(db) as conn:
        rows = conn.execute('SELECT "status", count(*) FROM mastra_scorers GROUP BY 1').fetchall()
    assert rows == [("success", 12)]
