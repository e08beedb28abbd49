"""Microbenchmarks (pyperf): the framework's own cost per run, per evaluation and per call.

    .venv/bin/python benchmarks/bench_micro.py -o micro.json [--timer cpu] [--only a,b] [--fast]

Each value is one batch of `loops` awaited calls inside ONE event loop, divided by `loops` (a
fresh loop per call would dominate microsecond figures). pyperf spawns worker processes, runs
warm-ups, calibrates the batch size and keeps every value for min/median/max. `--timer cpu`
times the calling thread's CPU instead of the wall clock (a fairer figure on a shared machine).

Benchmarks:
  quality/no-telemetry, quality/telemetry-in-memory, quality/telemetry-prometheus  (issue #1)
  summarization/framework     (#2: three judge calls answered in-process at zero latency)
  live/bare, live/not-sampled, live/sampled-enqueue  (#3: overhead = watched minus bare)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
from _common import QUESTION, TWELVE_WORDS, quality_scorer, timed_runner

NAMES = (
    "quality/no-telemetry",
    "quality/telemetry-in-memory",
    "quality/telemetry-prometheus",
    "summarization/framework",
    "live/bare",
    "live/not-sampled",
    "live/sampled-enqueue",
)

_loop: asyncio.AbstractEventLoop | None = None
_state: dict[str, Any] = {}
_timer: Callable[[], float] = time.perf_counter


def loop() -> asyncio.AbstractEventLoop:
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        asyncio.set_event_loop(_loop)
    return _loop


# -- #1 the quality scorer ---------------------------------------------------------------------


def _quality_setup(variant: str) -> tuple[Any, Callable[[], None]]:
    scorer = quality_scorer()
    if variant == "in-memory":
        from _common import instrument_in_memory

        exporters = instrument_in_memory()
        return scorer, exporters.clear
    if variant == "prometheus":
        from _common import configure_prometheus

        _state["handle"] = configure_prometheus()
    return scorer, lambda: None


async def _quality_batch(scorer: Any, loops: int) -> float:
    run = scorer.run
    started = _timer()
    for _ in range(loops):
        await run(input=QUESTION, output=TWELVE_WORDS)
    return _timer() - started


def time_quality(loops: int, variant: str) -> float:
    if "quality" not in _state:
        _state["quality"] = _quality_setup(variant)
    scorer, after = _state["quality"]
    took = loop().run_until_complete(_quality_batch(scorer, loops))
    after()  # empty the in-memory exporters outside the timed batch
    return took


# -- #2 the summarization scorer with an in-process judge ---------------------------------------


def _summarization_setup() -> tuple[Any, str, str]:
    from summarization_prompt_size import SUMMARY, reply, source_of

    from scorewatch.scorers import create_summarization_scorer
    from scorewatch.testing import ScriptedJudge

    canned: dict[str, str] = {}

    def answer(request: Any) -> str:
        # The replies are made once: the benchmark times scorewatch, not the script.
        text = canned.get(request.step)
        if text is None:
            text = canned[request.step] = reply(request)
        return text

    scorer = create_summarization_scorer(ScriptedJudge(answer))
    return scorer, source_of(400), SUMMARY


async def _summarization_batch(scorer: Any, source: str, summary: str, loops: int) -> float:
    run = scorer.run
    started = _timer()
    for _ in range(loops):
        await run(input=source, output=summary)
    return _timer() - started


def time_summarization(loops: int) -> float:
    if "summarization" not in _state:
        _state["summarization"] = _summarization_setup()
    scorer, source, summary = _state["summarization"]
    return loop().run_until_complete(_summarization_batch(scorer, source, summary, loops))


# -- #3 live watch -----------------------------------------------------------------------------


async def agent(question: str) -> str:
    return "answer to " + question


def _live_setup(variant: str) -> tuple[Any, Any]:
    from scorewatch.live import LiveScorerEntry, LiveScoring, Sampling

    if variant == "bare":
        return agent, None
    sampling = Sampling.ratio(0.0) if variant == "not-sampled" else Sampling.none()
    live = LiveScoring(
        {"quality": LiveScorerEntry(quality_scorer(), sampling=sampling)},
        max_queue=10_000_000,
        drain_on_exit=False,
    )
    return live.watch(target="agent")(agent), live


async def _live_batch(call: Any, live: Any, loops: int) -> float:
    started = _timer()
    for _ in range(loops):
        await call(QUESTION)
    took = _timer() - started
    if live is not None:
        # Sampled runs were only queued while timing (the agent never yields to the loop);
        # they are scored here, outside the timed batch.
        await live.drain(timeout=None)
    return took


def time_live(loops: int, variant: str) -> float:
    key = f"live/{variant}"
    if key not in _state:
        _state[key] = _live_setup(variant)
    call, live = _state[key]
    return loop().run_until_complete(_live_batch(call, live, loops))


# -- runner ------------------------------------------------------------------------------------


def main() -> None:
    global _timer
    runner, args, chosen = timed_runner(NAMES)
    _timer = time.thread_time if args.timer == "cpu" else time.perf_counter
    metadata = {"timer": args.timer}
    for name in NAMES:
        if name not in chosen:
            continue
        group, variant = name.split("/", 1)
        if group == "quality":
            runner.bench_time_func(
                name, time_quality, variant.removeprefix("telemetry-"), metadata=metadata
            )
        elif group == "summarization":
            runner.bench_time_func(name, time_summarization, metadata=metadata)
        else:
            runner.bench_time_func(name, time_live, variant, metadata=metadata)


if __name__ == "__main__":
    main()
