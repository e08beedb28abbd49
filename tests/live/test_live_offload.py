"""CPU-heavy scoring off the event loop (issue 17, item 7): the core mechanism, live scoring of
megabyte outputs while the agent's loop keeps turning, and litellm warmed up off the loop.

Nothing here asserts a speed or a duration: a step that waits for the loop to turn proves that
it ran off the loop, on any machine. Latency is measured in benchmarks/.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import scorewatch as sw
from live_support import word_text as _text
from scorewatch.core import offload_function_steps
from scorewatch.core.call import AgentCall
from scorewatch.live import LiveScoring
from scorewatch.live.engine import OFFLOAD_CHARS, call_is_heavy
from scorewatch.scorers.completeness import create_completeness_scorer
from scorewatch.scorers.content_similarity import create_content_similarity_scorer
from scorewatch.testing import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.integration

_PROBE = contextvars.ContextVar("probe", default="unset")


async def _max_lag_while(work: asyncio.Future[object]) -> tuple[float, int]:
    """The largest delay of a 10 ms timer on this loop while `work` runs, and the count."""
    lags: list[float] = []
    while not work.done():
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - started - 0.01)
    await work
    return max(lags, default=0.0), len(lags)


def test_sync_function_steps_run_in_the_installed_executor_with_the_context() -> None:
    seen: list[tuple[str, str]] = []

    def step(ctx: sw.StepContext) -> float:
        seen.append((threading.current_thread().name, _PROBE.get()))
        return 1.0

    scorer = sw.create_scorer(id="where", description="records its thread").generate_score(step)

    async def main() -> None:
        _PROBE.set("from the caller")
        await scorer.run(input="q", output="a")
        pool = ThreadPoolExecutor(1, thread_name_prefix="offload-test")
        with pool, offload_function_steps(pool):
            result = await scorer.run(input="q", output="a")
        assert result.score == 1.0
        await scorer.run(input="q", output="a")

    asyncio.run(main())
    assert seen[0] == (threading.main_thread().name, "from the caller")
    assert seen[1][0].startswith("offload-test") and seen[1][1] == "from the caller"
    assert seen[2][0] == threading.main_thread().name


def test_a_call_is_heavy_by_its_text_not_its_shape() -> None:
    def call(**fields: object) -> AgentCall:
        base: dict[str, object] = {"target": "t", "trace_id": None, "span_id": None, "run_id": "r"}
        return AgentCall(**{**base, **fields})  # type: ignore[arg-type]

    small = call(input="q" * 100, output=[{"role": "assistant", "content": "a" * 100}])
    big = call(input="q", output=[{"role": "assistant", "content": "a" * (OFFLOAD_CHARS + 1)}])
    truth = call(input="q", output="a", ground_truth={"text": "t" * (OFFLOAD_CHARS + 1)})
    assert not call_is_heavy(small)
    assert call_is_heavy(big) and call_is_heavy(truth)
    # Two plain texts (the common call, counted without the walk) at and just over the limit.
    at = call(input="q" * 10, output="a" * (OFFLOAD_CHARS - 18))
    over = call(input="q" * 10, output="a" * (OFFLOAD_CHARS - 17))
    assert not call_is_heavy(at) and call_is_heavy(over)
    assert call_is_heavy(over, limit=OFFLOAD_CHARS) == call_is_heavy(
        call(input=["q" * 10], output="a" * (OFFLOAD_CHARS - 17)), limit=OFFLOAD_CHARS + 1
    )


def _loop_gate_scorer(turns: int) -> tuple[sw.Scorer, threading.Event, threading.Event]:
    """A scorer whose function step waits until the loop has turned `turns` times since the
    step started: it finishes off the loop, and would wait in vain on it (the loop being held
    by the step itself). No clock decides anything, so the machine's speed does not matter."""
    started, turned = threading.Event(), threading.Event()

    def step(ctx: sw.StepContext) -> float:
        started.set()
        if not turned.wait(30):
            raise RuntimeError(f"the loop did not turn {turns} times while the step ran")
        return 1.0

    scorer = sw.create_scorer(id="gate", description="waits for the loop").generate_score(step)
    return scorer, started, turned


async def _turn_while_gated(started: threading.Event, turned: threading.Event, turns: int) -> None:
    await asyncio.to_thread(started.wait, 60)
    for _ in range(turns):
        await asyncio.sleep(0.01)
    turned.set()


def test_live_scoring_of_megabyte_outputs_leaves_the_agent_loop_free() -> None:
    heavy = _text(1_000_000, 3)
    reference = _text(100_000, 4)
    gate, started, turned = _loop_gate_scorer(turns=20)
    scorers = {
        "completeness": create_completeness_scorer(),
        "similar": create_content_similarity_scorer(),
        "gate": gate,
    }

    async def main() -> tuple[float, int, dict[str, int]]:
        live = LiveScoring(scorers, drain_on_exit=False)
        for seed in range(3):
            live.submit(
                input=heavy, output=_text(100_000, seed + 10), ground_truth=reference, target="a"
            )
        probe = asyncio.ensure_future(_turn_while_gated(started, turned, 20))
        drained = asyncio.ensure_future(live.drain(timeout=600))
        lag, probes = await _max_lag_while(drained)
        await probe
        stats = live.stats()
        await live.aclose()
        return lag, probes, stats

    lag, probes, stats = asyncio.run(main())
    # The gate's step finished: the loop turned 20 times while a heavy call was being scored.
    assert turned.is_set()
    assert stats["scored"] == 9 and stats["failed"] == 0, stats
    print(f"loop lag at most {lag:.3f}s over {probes} probes")


_WARM_UP_SCRIPT = textwrap.dedent(
    """
    import asyncio, builtins, sys, threading, time

    import scorewatch as sw
    from scorewatch.live import LiveScoring

    importers = []
    original_import = builtins.__import__

    def recording_import(name, *args, **kwargs):
        if name == "litellm" and "litellm" not in sys.modules:
            importers.append(threading.current_thread().name)
        return original_import(name, *args, **kwargs)

    builtins.__import__ = recording_import

    judge = sw.JudgeConfig(
        model="openai/loopback-judge",
        instructions="You rate answers.",
        model_options={"api_base": sys.argv[1], "api_key": "sk-test", "max_retries": 0},
    )
    scorer = sw.create_scorer(id="judged", description="one judge call", judge=judge)
    scorer = scorer.generate_score(sw.PromptStep("rate", lambda ctx: f"Rate: {ctx.run.output}"))

    async def main():
        live = LiveScoring({"judged": scorer}, drain_on_exit=False)
        live.submit(input="q", output="a", target="agent")
        assert await live.drain(timeout=120)
        stats = live.stats()
        await live.aclose()
        return stats

    stats = asyncio.run(main())
    print("importers", importers, "scored", stats["scored"], "main", threading.main_thread().name)
    """
)


def test_live_scoring_imports_litellm_off_the_agent_loop(tmp_path: Path) -> None:
    script = tmp_path / "warm_up.py"
    script.write_text(_WARM_UP_SCRIPT, encoding="utf-8")
    with LoopbackJudgeServer(default=Reply('{"score": 0.5}')) as judge:
        done = subprocess.run(
            [sys.executable, str(script), judge.base_url],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
    assert done.returncode == 0, done.stderr
    assert "scored 1" in done.stdout, done.stdout
    assert "importers ['scorewatch-litellm-warm-up']" in done.stdout, done.stdout
