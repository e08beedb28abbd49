"""`scorewatch calibrate`: how well a scorer agrees with human labels, and where to set its pass
mark.

    scorewatch calibrate labelled.jsonl --scorer keyword-coverage --min-kappa 0.6

Each line of the file is an evaluation item (`input`, `output`, optional `ground_truth`, as
`scorewatch eval` reads them) with the person's `label`: a number on the scorer's scale or
`pass`/`fail` (and an optional `comment`). The scorer runs over every item; the command prints
the agreement (kappa, accuracy, confusion, false-pass/false-fail rates; Spearman and mean
absolute error for labels on the scale, each with its interval), the threshold on the scorer's
scale that best matches the people and how much better it is than `--threshold`, and the worst
disagreements. `--html` writes them as a page; `--min-kappa` / `--min-spearman` exit 1 below.
A run that fails is reported, never counted as a score.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import ScorewatchError
from ._scoring_run import add_judge_arguments, model_options

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("labelled", help="items with a human `label` (JSONL)")
    parser.add_argument(
        "--scorer", required=True, help="a prebuilt scorer's short name or module:factory"
    )
    add_judge_arguments(parser)
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="the scorer's current pass mark (default: half its scale)",
    )
    parser.add_argument("--min-kappa", type=float, help="exit 1 when pass/fail kappa is below")
    parser.add_argument("--min-spearman", type=float, help="exit 1 when Spearman is below")
    parser.add_argument("--concurrency", type=int, default=4, help="items scored at once")
    parser.add_argument("--html", help="write the calibration as an HTML page here")
    parser.add_argument("--format", choices=("table", "json"), default="table")


def _labels(path: Path) -> list[tuple[int, float | str, str | None]]:
    """(line, label, comment) of every item, in file order."""
    found: list[tuple[int, float | str, str | None]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        label = row.get("label") if isinstance(row, dict) else None
        if not (
            label in ("pass", "fail")
            or (isinstance(label, int | float) and not isinstance(label, bool))
        ):
            raise ScorewatchError(
                f"{path}:{number}: 'label' must be a number on the scale, 'pass' or 'fail'",
                code="SCOREWATCH_DATASET_INVALID",
            )
        comment = row.get("comment")
        value: float | str = label if isinstance(label, str) else float(label)
        found.append((number, value, comment if isinstance(comment, str) else None))
    return found


async def _score(scorer: Any, items: list[dict[str, Any]], concurrency: int) -> list[Any]:
    from ..core.result import ScorerRun
    from ..evals.data import item_call

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(item: dict[str, Any]) -> Any:
        async with gate:
            try:
                # The item's call, as run_evals and eval read a dataset item.
                return await scorer.run(ScorerRun.of_call(item_call(item)))
            except Exception as error:  # a failed run is reported, never a score
                return error

    return await asyncio.gather(*(one(item) for item in items))


def run(args: argparse.Namespace) -> int:
    from ..evals.calibration import LabelledItem, calibrate
    from ._calibrate_html import print_calibration, render_calibration
    from ._dataset_file import load_dataset
    from ._scorer_args import resolve_scorer

    path = Path(args.labelled)
    items = load_dataset(path)
    labels = _labels(path)
    scorer = resolve_scorer(args.scorer, args.model, model_options(args.model_option))
    outcomes = asyncio.run(_score(scorer, items, args.concurrency))
    labelled: list[LabelledItem] = []
    failed: list[str] = []
    for (line, label, comment), outcome in zip(labels, outcomes, strict=True):
        if isinstance(outcome, Exception) or getattr(outcome, "score", None) is None:
            failed.append(f"line {line}: {type(outcome).__name__}")
            continue
        labelled.append(LabelledItem(f"line {line}", label, float(outcome.score), comment))
    scale = float(scorer.scale)
    threshold = scale / 2 if args.threshold is None else args.threshold
    result = calibrate(
        scorer.id,
        scorer.version_fingerprint,
        labelled,
        threshold=threshold,
        scale=scale,
        higher_passes=scorer.direction == "higher_is_better",
    )
    document = {**result.as_dict(), "failed": failed}
    if args.format == "json":
        print(json.dumps(document, indent=2))
    else:
        print_calibration(document, sys.stdout)
    if args.html:
        Path(args.html).write_text(render_calibration(document), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr if args.format == "json" else sys.stdout)
    below: list[str] = []
    if args.min_kappa is not None and not (result.kappa or -2) >= args.min_kappa:
        below.append(f"kappa {result.kappa} < {args.min_kappa}")
    if args.min_spearman is not None and not (result.spearman or -2) >= args.min_spearman:
        below.append(f"spearman {result.spearman} < {args.min_spearman}")
    for problem in below:
        print(f"scorewatch calibrate: below the gate: {problem}", file=sys.stderr)
    return 1 if below else 0
