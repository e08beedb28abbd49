"""The model-free scorers on large and hostile texts (pyperf): CPU per run.

    .venv/bin/python benchmarks/bench_model_free.py -o model_free.json [--fast]

Texts: `large` is ~150 kB of input against ~40 kB of output (25,000 words drawn from 5,000);
`hostile` is one 50,000-character word with no sentence end, no space and many `<`. The
reference fills an n x m table for the textual difference and compares every pair of elements
for completeness; these figures show how far below that scorewatch stays.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
import pyperf

SCORERS = ("textual-difference", "content-similarity", "keyword-coverage", "tone", "completeness")
TEXTS = ("large", "hostile")


def _texts(kind: str) -> tuple[str, str]:
    if kind == "hostile":
        return "<x" * 25_000, "y<" * 25_000
    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(5_000)]

    def text(count: int) -> str:
        ends = ("", "", ".", ",", "!")
        return " ".join(rng.choice(words) + rng.choice(ends) for _ in range(count))

    return text(20_000), text(5_000)


def _scorer(name: str) -> Any:
    from scorewatch.scorers.registry import build_scorer

    return build_scorer("tone-consistency" if name == "tone" else name)


def time_scorer(loops: int, name: str, kind: str) -> float:
    scorer = _scorer(name)
    question, answer = _texts(kind)
    event_loop = asyncio.new_event_loop()
    try:
        started = time.perf_counter()
        for _ in range(loops):
            event_loop.run_until_complete(scorer.run(input=question, output=answer))
        return time.perf_counter() - started
    finally:
        event_loop.close()


def main() -> None:
    runner = pyperf.Runner()
    for name in SCORERS:
        for kind in TEXTS:
            runner.bench_time_func(f"{name}/{kind}", time_scorer, name, kind)


if __name__ == "__main__":
    main()
