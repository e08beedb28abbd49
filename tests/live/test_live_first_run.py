"""The first judged run of `LiveScoring` does not freeze the agent's event loop (issue 28, item
18): litellm's import (seconds of CPU) happens in a worker thread, never on the loop.

Each case runs in a fresh interpreter (litellm not imported yet), as an agent starts: a ticker
on the agent's loop measures its longest stall while the first judged run is scored against
the loopback judge. Before, the loop stalled for the whole import (3.4-4.3 s measured in the
issue, about 6 s here with a `LiteLLMJudge` instance). A thread still shares the GIL, and some
of the import holds it in C for a few hundred milliseconds at a time, so the bound is relative:
the longest stall is a fraction of the time the warm-up took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scorewatch.testing import LoopbackJudgeServer

pytestmark = pytest.mark.integration

SRC = str(Path(__file__).resolve().parents[2] / "src")

AGENT = textwrap.dedent(
    """
    import asyncio, json, sys, time

    import scorewatch as sw
    from scorewatch.judge.litellm_judge import warm_up_in_background

    BASE, FORM = sys.argv[1], sys.argv[2]
    OPTIONS = {"api_base": BASE, "api_key": "sk-test", "max_retries": 0}


    async def main():
        assert "litellm" not in sys.modules
        if FORM == "instance":
            judge = sw.JudgeConfig(
                model=sw.LiteLLMJudge("openai/loopback-judge", **OPTIONS), instructions="Rate."
            )
        else:
            judge = sw.JudgeConfig(
                model="openai/loopback-judge", instructions="Rate.", model_options=OPTIONS
            )
        scorer = sw.create_scorer(id="judged", description="One judge call", judge=judge)
        scorer = scorer.generate_score(sw.PromptStep("rate", lambda ctx: f"Rate {ctx.run.output}"))
        worst, done = 0.0, False

        async def ticker():
            nonlocal worst
            last = time.perf_counter()
            while not done:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                worst, last = max(worst, now - last - 0.005), now

        ticking = asyncio.create_task(ticker())
        started = time.perf_counter()
        live = sw.LiveScoring({"judged": scorer}, drain_on_exit=False)
        live.submit(input="q", output="an answer", run_id="first")
        await asyncio.wrap_future(warm_up_in_background())
        warm_up = time.perf_counter() - started
        await live.drain(120)
        done = True
        await ticking
        print(json.dumps({"stall": worst, "warm_up": warm_up, "stats": live.stats()}))
        await live.aclose()


    asyncio.run(main())
    """
)


@pytest.mark.parametrize("form", ["model-id", "instance"])
def test_the_first_judged_run_leaves_the_agents_loop_running(form: str) -> None:
    with LoopbackJudgeServer(default='{"score": 1}') as judge:
        env = {**os.environ, "PYTHONPATH": SRC, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(
            [sys.executable, "-c", AGENT, judge.base_url, form],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert judge.request_count == 1
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["stats"]["scored"] == 1, measured
    assert measured["warm_up"] > 0.5, measured  # litellm was really imported meanwhile
    assert measured["stall"] < 0.5 * measured["warm_up"], measured
