"""`--estimate` of `scorewatch eval` and `scorewatch score-traces`: what the scoring would cost,
printed without calling any judge (evals/estimate.py does the counting)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ..core.scorer import Scorer
from ..evals.estimate import CostEstimate, estimate_scoring

__all__ = ["print_estimate", "run_estimate"]


def run_estimate(
    data: Sequence[Mapping[str, Any]],
    scorers: Sequence[Scorer],
    *,
    repeat: int,
    output_format: str,
    out: IO[str],
    batch: bool = False,
) -> int:
    """Estimate (at Batch API prices with `batch`), print, exit 0."""
    estimate = asyncio.run(estimate_scoring(data, scorers, repeat=repeat, batch=batch))
    if output_format == "json":
        print(json.dumps({"estimate": estimate.as_json()}, indent=2), file=out)
    else:
        print_estimate(estimate, len(data), out)
    return 0


def print_estimate(estimate: CostEstimate, items: int, out: IO[str]) -> None:
    print(f"estimate for {items} items; no judge was called", file=out)
    header = ("scorer", "judge calls", "prompt tokens", "completion tokens", "cost USD")
    rows = [header]
    for scorer_id, found in estimate.scorers.items():
        sources = "/".join(sorted(found.completion_sources)) or "-"
        cost = f"{found.cost_usd:.4f}" + (
            f" (+{found.unpriced_calls} unpriced)" if found.unpriced_calls else ""
        )
        rows.append(
            (
                scorer_id,
                f"{found.judge_calls:,}",
                f"{found.prompt_tokens:,}",
                f"{round(found.completion_tokens):,} ({sources})",
                cost,
            )
        )
    rows.append(("total", f"{estimate.judge_calls:,}", "", "", f"{estimate.cost_usd:.4f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip(), file=out)
    print(f"prices: {estimate.price_source}", file=out)
    unfollowed = sum(found.unfollowed for found in estimate.scorers.values())
    if unfollowed:
        print(
            f"{unfollowed} runs could not be followed to their last step (a step refused the "
            "stand-in answer): their later judge calls are not counted",
            file=out,
        )
