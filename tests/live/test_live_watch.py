"""`LiveScoring.watch`: the decorated call behaves exactly as without scorewatch."""

from __future__ import annotations

import asyncio
import inspect
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from live_support import Collected, GatedJudge, constant_scorer, failing_judge, judged_scorer
from scorewatch.live import LiveScorerEntry, LiveScoring

pytestmark = pytest.mark.unit


class AgentError(Exception):
    pass


def make_live(**kwargs: Any) -> tuple[LiveScoring, Collected]:
    collected = Collected()
    live = LiveScoring(
        {"constant": constant_scorer()},
        sinks=[collected.sink()],
        drain_on_exit=False,
        **kwargs,
    )
    return live, collected


async def test_async_function_returns_the_same_object_and_is_scored() -> None:
    live, collected = make_live()
    answer_object = {"text": "an answer"}

    @live.watch(target="support-bot")
    async def answer(question: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return answer_object

    assert inspect.iscoroutinefunction(answer)
    assert answer.__name__ == "answer"
    assert await answer("why?") is answer_object
    assert await live.drain(10)
    (result,) = collected.results
    assert result.call.input == "why?"
    assert result.call.output is answer_object
    assert result.call.target == "support-bot"
    assert result.score == 1.0
    assert live.stats()["scored"] == 1
    await live.aclose()


async def test_async_exception_propagates_unchanged_and_the_call_is_not_scored() -> None:
    live, collected = make_live()
    raised = AgentError("agent broke")

    @live.watch(target="bot")
    async def answer(question: str) -> str:
        raise raised

    with pytest.raises(AgentError) as caught:
        await answer("q")
    assert caught.value is raised
    assert await live.drain(10)
    assert collected.results == []
    assert live.stats()["sampled"] == 0
    await live.aclose()


def test_sync_function_value_and_exception_without_an_event_loop() -> None:
    live, collected = make_live()

    @live.watch(target="bot")
    def answer(question: str, *, fail: bool = False) -> str:
        if fail:
            raise KeyError(question)
        return question[::-1]

    assert not inspect.iscoroutinefunction(answer)
    assert answer("abc") == "cba"
    with pytest.raises(KeyError):
        answer("x", fail=True)
    assert live.drain_sync(10)
    assert [r.call.output for r in collected.results] == ["cba"]
    live.close()


async def test_methods_classmethods_and_staticmethods_use_the_first_real_argument() -> None:
    live, collected = make_live()

    class Agent:
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        @live.watch(target="method")
        def answer(self, question: str) -> str:
            return self.prefix + question

        @live.watch(target="async-method")
        async def answer_async(self, question: str) -> str:
            return self.prefix + question.upper()

        @live.watch(target="classmethod")
        @classmethod
        def build(cls, question: str) -> str:
            return f"{cls.__name__}:{question}"

        @live.watch(target="staticmethod")
        @staticmethod
        def echo(question: str) -> str:
            return question

    agent = Agent("> ")
    assert agent.answer("one") == "> one"
    assert await agent.answer_async("two") == "> TWO"
    assert Agent.build("three") == "Agent:three"
    assert agent.echo("four") == "four"
    assert inspect.iscoroutinefunction(agent.answer_async)
    assert await live.drain(10)
    seen = {r.call.target: (r.call.input, r.call.output) for r in collected.results}
    assert seen == {
        "method": ("one", "> one"),
        "async-method": ("two", "> TWO"),
        "classmethod": ("three", "Agent:three"),
        "staticmethod": ("four", "four"),
    }
    await live.aclose()


async def test_input_by_keyword_by_default_and_through_input_from() -> None:
    live, collected = make_live()

    @live.watch(target="keyword")
    async def answer(question: str = "default question", style: str = "plain") -> str:
        return "ok"

    @live.watch(target="custom", input_from=lambda q, history: {"q": q, "turns": len(history)})
    def chat(q: str, history: list[str]) -> str:
        return "fine"

    await answer(question="by keyword")
    await answer()
    chat("hello", ["a", "b"])
    assert await live.drain(10)
    inputs = sorted((r.call.target, repr(r.call.input)) for r in collected.results)
    assert inputs == [
        ("custom", repr({"q": "hello", "turns": 2})),
        ("keyword", repr("by keyword")),
        ("keyword", repr("default question")),
    ]
    await live.aclose()


def test_generators_are_refused_with_a_clear_error() -> None:
    live, _ = make_live()

    def numbers(n: int) -> Any:
        yield from range(n)

    async def stream(n: int) -> Any:
        yield n

    with pytest.raises(TypeError, match=r"is a generator function.*live\.submit"):
        live.watch(target="gen")(numbers)
    with pytest.raises(TypeError, match="is an async generator function"):
        live.watch(target="agen")(stream)
    live.close()


async def test_nothing_that_goes_wrong_in_scorewatch_reaches_the_agent() -> None:
    def broken_filter(call: Any) -> bool:
        raise RuntimeError("filter bug")

    def broken_input(question: str) -> str:
        raise RuntimeError("input_from bug")

    class BrokenSink:
        name = "broken"

        async def write(self, results: Any) -> None:
            raise OSError("disk full")

        async def aclose(self) -> None:
            return None

    live = LiveScoring(
        {
            "judged": judged_scorer(failing_judge(), "judged"),
            "filtered": LiveScorerEntry(constant_scorer("filtered"), filter=broken_filter),
        },
        sinks=[BrokenSink()],
        drain_on_exit=False,
    )

    @live.watch(target="bot")
    async def answer(question: str) -> str:
        return "answer"

    @live.watch(target="bot", input_from=broken_input)
    async def other(question: str) -> str:
        return "other"

    assert [await answer(str(i)) for i in range(5)] == ["answer"] * 5
    assert await other("q") == "other"
    assert await live.drain(10)
    stats = live.stats()
    assert stats["failed"] == 5  # the judge outage, recorded as failures
    assert stats["filtered"] == 5  # the raising filter skips, and is counted
    assert live.sink_errors() == {"broken": 5}
    await live.aclose()


async def test_a_blocked_judge_does_not_hold_up_the_agent() -> None:
    judge = GatedJudge()
    live = LiveScoring({"judged": judged_scorer(judge)}, max_concurrency=2, drain_on_exit=False)
    agent_calls = 0

    @live.watch(target="bot")
    async def answer(question: str) -> str:
        nonlocal agent_calls
        agent_calls += 1
        return question

    for i in range(10):
        assert await answer(str(i)) == str(i)
        await asyncio.sleep(0)  # let the queue start runs on this loop
    # Every agent call returned while the judge is still blocked on its gate.
    assert agent_calls == 10
    assert judge.waiting == 2
    stats = live.stats()
    assert (stats["in_flight"], stats["queued"], stats["scored"]) == (2, 8, 0)
    judge.open()
    assert await live.drain(10)
    assert live.stats()["scored"] == 10
    assert judge.max_waiting == 2  # max_concurrency held
    await live.aclose()


def test_threads_without_loops_share_one_background_loop() -> None:
    live, collected = make_live()
    threads: set[str] = set()

    def record_thread(ctx: Any) -> float:
        threads.add(threading.current_thread().name)
        return 0.5

    from scorewatch import create_scorer

    live = LiveScoring(
        {"where": create_scorer(id="where", description="").generate_score(record_thread)},
        sinks=[collected.sink()],
        drain_on_exit=False,
    )

    @live.watch(target="bot")
    def answer(question: str) -> str:
        return question

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(answer, [str(i) for i in range(40)])) == [str(i) for i in range(40)]
    assert live.drain_sync(10)
    assert len(collected.results) == 40
    assert threads == {"scorewatch-loop"}
    live.close()


async def test_blocking_close_inside_a_running_loop_is_refused() -> None:
    live, _ = make_live()
    with pytest.raises(RuntimeError, match="aclose"):
        live.close()
    await live.aclose()


async def test_a_judge_outage_is_logged_once_not_once_per_run(caplog: Any) -> None:
    live = LiveScoring({"judged": judged_scorer(failing_judge(), "judged")}, drain_on_exit=False)
    for i in range(20):
        live.submit(output=str(i))
    assert await live.drain(10)
    assert live.stats()["failed"] == 20
    failures = [r for r in caplog.records if "live scorer 'judged' failed" in r.getMessage()]
    assert len(failures) == 1
    await live.aclose()
