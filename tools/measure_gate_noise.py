"""Measure the noise-aware comparison gate over many seeds: how often `report --compare` fails a
run that differs from its baseline only by the judge's noise (false failures), and how often it
catches a real drop. Both runs score the same items with a scripted judge of known noise
(tests/noise_support.py), through `run_experiment` and the records `scorewatch eval --out` writes.

    python tools/measure_gate_noise.py --seeds 500

A tool of the repository (docs/evaluation.md quotes its output), not of the package.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from noise_support import items_of_quality, noisy_judge, noisy_scorer  # noqa: E402
from scorewatch.commands._results_file import outcome_record  # noqa: E402
from scorewatch.evals import RunOutcome, run_experiment  # noqa: E402
from scorewatch.evals.compare import compare_records  # noqa: E402

__all__ = ["Trial", "gate_rates", "records_of"]


@dataclass(frozen=True, slots=True)
class Trial:
    """One seed's two comparisons: candidate = baseline's items judged again (noise only), and
    the same items `drop` worse."""

    noise_only_failed: bool
    real_drop_failed: bool


async def records_of(
    data: list[dict[str, Any]], judge_seed: int, sigma: float, repeat: int
) -> list[dict[str, Any]]:
    """The `--out` records of one `eval --repeat` run of the noisy scorer over `data`."""
    records: list[dict[str, Any]] = []

    def keep(outcome: RunOutcome) -> None:
        records.append(outcome_record(outcome, data[outcome.item_index]))

    scorer = noisy_scorer(noisy_judge(sigma, judge_seed))
    await run_experiment(data=data, scorers=[scorer], on_result=keep, repeat=repeat, concurrency=8)
    return records


async def trial(
    seed: int, *, items: int, sigma: float, repeat: int, drop: float, max_drop: float
) -> Trial:
    data = items_of_quality(items, seed=seed)
    worse = items_of_quality(items, seed=seed, shift=drop)
    baseline = await records_of(data, judge_seed=2 * seed, sigma=sigma, repeat=repeat)
    again = await records_of(data, judge_seed=2 * seed + 1, sigma=sigma, repeat=repeat)
    dropped = await records_of(worse, judge_seed=2 * seed + 1, sigma=sigma, repeat=repeat)
    return Trial(
        noise_only_failed=not compare_records(baseline, again, max_drop=max_drop).passed,
        real_drop_failed=not compare_records(baseline, dropped, max_drop=max_drop).passed,
    )


def gate_rates(
    seeds: range,
    *,
    items: int = 30,
    sigma: float = 0.1,
    repeat: int = 3,
    drop: float = 0.15,
    max_drop: float = 0.05,
) -> tuple[float, float]:
    """(false-failure rate, detection rate) over `seeds`."""

    async def run_all() -> list[Trial]:
        return [
            await trial(seed, items=items, sigma=sigma, repeat=repeat, drop=drop, max_drop=max_drop)
            for seed in seeds
        ]

    trials = asyncio.run(run_all())
    false_failures = sum(t.noise_only_failed for t in trials) / len(trials)
    detected = sum(t.real_drop_failed for t in trials) / len(trials)
    return false_failures, detected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--drop", type=float, default=0.15)
    args = parser.parse_args()
    for max_drop in (0.05, 0.0):
        false_failures, detected = gate_rates(
            range(args.seeds),
            items=args.items,
            sigma=args.sigma,
            repeat=args.repeat,
            drop=args.drop,
            max_drop=max_drop,
        )
        print(
            f"{args.seeds} seeds, {args.items} items x {args.repeat} judgements, judge noise "
            f"sd {args.sigma}, --max-drop {max_drop}: false failures {false_failures:.1%}, "
            f"real drop of {args.drop} caught {detected:.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
