"""`scorewatch report`: the HTML report of an earlier eval, or the comparison of two runs.

    scorewatch report results.jsonl --html report.html
    scorewatch report --compare baseline.jsonl results.jsonl [--html report.html]

With `--compare`, the per-scorer mean deltas with their confidence intervals and the regressed
and improved items are printed (and shown in the HTML report); the exit code is 1 when a scorer's
mean dropped by more than `--max-drop` of its scale with the chosen `--confidence`, so the
command can gate CI, and 2 when a scorer's version differs between the runs (unless
`--allow-scorer-change`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import ScorewatchError
from ..evals.compare import compare_records
from ._eval_output import add_comparison_arguments, print_comparison, print_noise
from ._report_html import render_report
from ._results_file import noise_of_records, read_results

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="?", help="the --out file of `scorewatch eval` (JSONL)")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("BASELINE", "CANDIDATE"),
        help="compare two runs' --out files: mean deltas, regressed and improved items",
    )
    add_comparison_arguments(parser, given="--compare")
    parser.add_argument("--html", help="where to write the HTML report")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--title", default="scorewatch evaluation")


def run(args: argparse.Namespace) -> int:
    if (args.results is None) == (args.compare is None):
        raise ScorewatchError(
            "give either a results file (with --html) or --compare BASELINE CANDIDATE",
            code="SCOREWATCH_CLI_USAGE",
        )
    if args.compare is None:
        if not args.html:
            raise ScorewatchError(
                "--html FILE is required to report a single run", code="SCOREWATCH_CLI_USAGE"
            )
        records = read_results(args.results)
        page = render_report(records, title=args.title, noise=noise_of_records(records))
        Path(args.html).write_text(page, encoding="utf-8")
        print(f"wrote {args.html} ({len(records)} results)")
        return 0
    baseline, candidate = (read_results(path) for path in args.compare)
    comparison = compare_records(
        baseline,
        candidate,
        max_drop=args.max_drop,
        confidence=args.confidence,
        allow_scorer_change=args.allow_scorer_change,
    )
    noise = noise_of_records(candidate)
    if args.format == "json":
        document = comparison.to_dict()
        document["noise"] = {key: value.model_dump() for key, value in noise.items()} or None
        print(json.dumps(document, indent=2, default=str))
    else:
        print_noise(noise, sys.stdout)
        print_comparison(comparison, sys.stdout)
        for problem in comparison.problems():
            print(problem)
    if args.html:
        page = render_report(candidate, title=args.title, comparison=comparison, noise=noise)
        Path(args.html).write_text(page, encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr if args.format == "json" else sys.stdout)
    return 0 if comparison.passed else 1
