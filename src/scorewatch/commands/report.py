"""`scorewatch report results.jsonl --html report.html`: the HTML report of an earlier eval."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..evals.report_html import render_report

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", help="the --out file of `scorewatch eval` (JSONL)")
    parser.add_argument("--html", required=True, help="where to write the report")
    parser.add_argument("--title", default="scorewatch evaluation")


def run(args: argparse.Namespace) -> int:
    path = Path(args.results)
    if not path.is_file():
        print(f"scorewatch report: {path}: no such file", file=sys.stderr)
        return 2
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            print(
                f"scorewatch report: {path}:{number}: not valid JSON ({exc.msg})", file=sys.stderr
            )
            return 2
    Path(args.html).write_text(render_report(records, title=args.title), encoding="utf-8")
    print(f"wrote {args.html} ({len(records)} results)")
    return 0
