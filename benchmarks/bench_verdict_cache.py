"""The verdict cache (issue #33): judge calls saved on live traffic, and its cost on a miss.

    .venv/bin/python benchmarks/bench_verdict_cache.py [-o result.json] [--calls 3000]

1. Savings. Live traffic of `--calls` agent calls, exactly 30% of which repeat an earlier call's
   output (each drawn at random from those seen before), is scored as live scoring scores it
   (`live.engine.score_call`) by a two-prompt-step scorer (analyze with a schema, then a
   reason) whose judge answers in-process, under an in-process LRU. Reported: judge calls made
   with and without the cache, the share saved, and that the scores are the same either way.
2. Cost on a miss. The same scorer on unique outputs (every lookup misses and every answer is
   stored), with the cache and without, in one event loop; CPU time per judged call (the calling
   thread's, `time.thread_time`), best and median of `--batches` batches. The difference is what
   a miss adds: the key's hash, the lookup, storing the answer and the lookup event.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from contextlib import nullcontext
from typing import Any

import _common

import scorewatch as sw
from scorewatch.core import MemoryVerdictCache, caching_verdicts
from scorewatch.core.call import AgentCall
from scorewatch.judge import JudgeReply, JudgeRequest, JudgeUsage
from scorewatch.live.engine import score_call
from scorewatch.testing import ScriptedJudge

REPEAT_SHARE = 0.30
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
USAGE = JudgeUsage(input_tokens=600, output_tokens=40, total_tokens=640)
# A realistic judge prompt: about 2 KB of context around the evaluated answer.
CONTEXT = "The assistant must answer precisely and cite the policy it relies on. " * 28


def answer(request: JudgeRequest) -> JudgeReply:
    text = '{"ok": true}' if request.step == "analyze" else "It follows the policy."
    return JudgeReply(text=text, usage=USAGE, estimated_cost_usd=0.0004)


def scorer(judge: ScriptedJudge) -> sw.Scorer:
    return (
        sw.create_scorer(
            id="policy",
            description="Follows the policy",
            judge=sw.JudgeConfig(model=judge, instructions="You are a strict judge."),
        )
        .analyze(
            sw.PromptStep(
                "Check the answer",
                lambda ctx: f"{CONTEXT}\nQuestion: {ctx.run.input}\nAnswer: {ctx.run.output}",
                output_schema=SCHEMA,
            )
        )
        .generate_score(lambda ctx: 1.0 if ctx.results.analyze_step_result["ok"] else 0.0)
        .generate_reason(
            sw.PromptStep("Explain", lambda ctx: f"Explain {ctx.score} for: {ctx.run.output}")
        )
    )


def traffic(calls: int, seed: int = 33) -> list[AgentCall]:
    rng = random.Random(seed)
    repeats = set(rng.sample(range(1, calls), round(calls * REPEAT_SHARE)))
    seen: list[str] = []
    made: list[AgentCall] = []
    for index in range(calls):
        if index in repeats:
            output = rng.choice(seen)
        else:
            output = f"Answer number {index}: the refund is possible within 30 days."
            seen.append(output)
        made.append(AgentCall("Can I get a refund?", output, "agent", None, None, f"r{index}"))
    return made


async def score_all(calls: list[AgentCall], cached: bool) -> tuple[int, list[float | None]]:
    judge = ScriptedJudge(answer)
    target = scorer(judge)
    scores: list[float | None] = []
    cache = MemoryVerdictCache()
    with caching_verdicts(cache) if cached else nullcontext():
        for index, call in enumerate(calls):
            record = await score_call(target, call, f"run-{index}")
            scores.append(record.score)
    return judge.calls, scores


def savings(calls: int) -> dict[str, Any]:
    made = traffic(calls)
    repeated = len(made) - len({call.output for call in made})
    without, plain = asyncio.run(score_all(made, cached=False))
    with_cache, reused = asyncio.run(score_all(made, cached=True))
    return {
        "agent_calls": len(made),
        "repeated_calls": repeated,
        "repeated_share": round(repeated / len(made), 4),
        "judge_calls_without_cache": without,
        "judge_calls_with_cache": with_cache,
        "judge_calls_saved_share": round(1 - with_cache / without, 4),
        "same_scores": plain == reused,
    }


async def _batch(target: sw.Scorer, start: int, size: int) -> float:
    began = time.thread_time()
    for index in range(start, start + size):
        await target.run(input="Can I get a refund?", output=f"unique answer {index}")
    return (time.thread_time() - began) / size


async def miss_cost(batches: int, size: int) -> dict[str, Any]:
    judge = ScriptedJudge(answer)
    target = scorer(judge)
    await _batch(target, -1000, 200)  # warm-up: imports, validators, the fingerprint
    off: list[float] = []
    on: list[float] = []
    cache = MemoryVerdictCache()
    for batch in range(batches):
        start = batch * size * 2
        off.append(await _batch(target, start, size))
        with caching_verdicts(cache):
            on.append(await _batch(target, start + size, size))
    judged_per_run = 2
    return {
        "judge_calls_per_run": judged_per_run,
        "run_cpu_us_without_cache": {
            "best": min(off) * 1e6,
            "median": statistics.median(off) * 1e6,
        },
        "run_cpu_us_with_cache_all_misses": {
            "best": min(on) * 1e6,
            "median": statistics.median(on) * 1e6,
        },
        "miss_overhead_us_per_judged_call": {
            "best": (min(on) - min(off)) * 1e6 / judged_per_run,
            "median": (statistics.median(on) - statistics.median(off)) * 1e6 / judged_per_run,
        },
        "cache_entries": len(cache),
        "cache_bytes": cache.bytes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=400)
    args = parser.parse_args()
    result = {
        "savings": savings(args.calls),
        "miss": asyncio.run(miss_cost(args.batches, args.batch_size)),
    }
    _common.emit(result, args.output)


if __name__ == "__main__":
    main()
