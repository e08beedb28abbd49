"""`scorewatch eval DATA --scorer NAME ...`: score a dataset and gate CI on the result.

Results are written to `--out` (JSONL, replacing an earlier file) as each (item, scorer) run
finishes, so an interrupted run keeps what it finished. `--repeat N` judges each item N times
with each LLM-judged scorer and reports the judge's noise. The exit code is 1 when a threshold
or gate fails, a run failed (unless `--allow-failures`) or the run regressed against `--baseline`
beyond the noise; 2 on bad usage or when a scorer's version differs from the baseline's (unless
`--allow-scorer-change`, checked before anything is scored); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import IO, Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError
from ..evals import run_experiment
from ..evals.compare import SCORER_CHANGED, compare_records
from ._dataset_file import load_dataset
from ._estimate import run_estimate
from ._eval_output import (
    add_comparison_arguments,
    failure_reasons,
    print_comparison,
    print_failures,
    print_noise,
)
from ._eval_scorers import CLI_USAGE, load_scorers
from ._report_html import render_report
from ._results_file import noise_of_records, read_results
from ._scorer_args import import_object
from ._scoring_run import (
    ScoringSession,
    add_scoring_arguments,
    batch_settings,
    concurrency_of,
    exit_code,
    json_summary,
    model_options,
    print_closing,
    print_summary_table,
    privacy_policy,
    run_scoring_command,
    thresholds_of,
    verdict,
    whole_number,
)
from ._summary import summarize_records

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", help="dataset file: .jsonl or .csv with input, output, ...")
    add_scoring_arguments(parser, unit="item")
    parser.add_argument("--target", help="module:callable producing each item's output")
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="an earlier run's --out file: show mean deltas and the items that regressed or "
        "improved, and fail on a regression beyond --max-drop",
    )
    add_comparison_arguments(parser, given="--baseline")
    parser.add_argument(
        "--repeat",
        type=whole_number,
        default=1,
        metavar="N",
        help="judge each item N times with each LLM-judged scorer (model-free scorers run "
        "once) and report each scorer's judge noise and item spread",
    )
    parser.add_argument("--html", help="also write a self-contained HTML report here")


def run(args: argparse.Namespace) -> int:
    return run_scoring_command(args, "eval", _run)


def _run(args: argparse.Namespace) -> int:
    options = model_options(args.model_option)
    found, gates = load_scorers(args.scorer, args.scorers, args.gate, args.model, options)
    thresholds = thresholds_of(found, args.threshold)
    baseline = read_results(args.baseline) if args.baseline else None
    if baseline is not None and not args.allow_scorer_change:
        _check_versions(baseline, found.by_id)
    if args.out:
        for flag, other in (("--baseline", args.baseline), ("the dataset", args.data)):
            if other and Path(args.out).resolve() == Path(other).resolve():
                raise ScorewatchError(
                    f"--out and {flag} are the same file: the run would overwrite it",
                    code=CLI_USAGE,
                )
    target = import_object(args.target) if args.target else None
    data = load_dataset(args.data, need_output=target is None)
    if args.estimate:
        if target is not None:
            raise ScorewatchError(
                "--estimate needs the outputs in the dataset: it never calls --target",
                code=CLI_USAGE,
            )
        scorers = list(found.by_id.values())
        return run_estimate(
            data,
            scorers,
            repeat=args.repeat,
            output_format=args.format,
            out=sys.stdout,
            batch=args.batch,
        )

    with contextlib.ExitStack() as stack:
        out = stack.enter_context(Path(args.out).open("w", encoding="utf-8")) if args.out else None
        return _evaluate(args, data, found.by_id, target, thresholds, gates, out, baseline)


def _check_versions(baseline: list[dict[str, Any]], scorers: dict[str, Scorer]) -> None:
    """Refuse, before any judge is called, a baseline scored by another version of a scorer."""
    for scorer_id, scorer in scorers.items():
        versions = sorted(
            {
                str(version)
                for record in baseline
                if record.get("scorer_id") == scorer_id
                if (version := record.get("scorer_version"))
            }
        )
        if versions and versions != [scorer.version_fingerprint]:
            raise ScorewatchError(
                f"scorer {scorer_id!r} changed version: {', '.join(versions)} (baseline) -> "
                f"{scorer.version_fingerprint}: scores of different scorer versions are not "
                "comparable (pass --allow-scorer-change to compare them anyway)",
                code=SCORER_CHANGED,
            )


def _evaluate(
    args: argparse.Namespace,
    data: list[dict[str, Any]],
    scorers: dict[str, Scorer],
    target: Any,
    thresholds: dict[str, float],
    gates: list[str],
    out: IO[str] | None,
    baseline: list[dict[str, Any]] | None,
) -> int:
    session = ScoringSession(data, sqlite=args.sqlite, out=out, batch=batch_settings(args))
    privacy = privacy_policy(args)
    interrupted = session.run(
        lambda: run_experiment(
            data=data,
            target=target,
            scorers=list(scorers.values()),
            concurrency=concurrency_of(args, len(data)),
            on_item_complete=session.on_item,
            on_result=session.on_result,
            repeat=args.repeat,
            privacy=privacy,
        )
    )
    records = session.records
    summaries = summarize_records(records)
    reasons = failure_reasons(records, session.target_failures)
    problems = verdict(summaries, thresholds, gates, reasons, args.allow_failures)
    problems.extend(session.store_problems())
    comparison = (
        compare_records(
            baseline,
            records,
            max_drop=args.max_drop,
            confidence=args.confidence,
            allow_scorer_change=args.allow_scorer_change,
        )
        if baseline is not None
        else None
    )
    if comparison is not None:
        problems.extend(comparison.problems())
    noise = noise_of_records(records)
    if args.html:
        page = render_report(records, comparison=comparison, noise=noise)
        Path(args.html).write_text(page, encoding="utf-8")
    if args.format == "json":
        summary = json_summary(summaries, problems, interrupted, reasons, comparison)
        summary["noise"] = {key: value.model_dump() for key, value in noise.items()} or None
        print(json.dumps(summary, indent=2))
    else:
        print_summary_table(summaries, sys.stdout)
        print_noise(noise, sys.stdout)
        print_failures(reasons, sys.stdout)
        if comparison is not None:
            print_comparison(comparison, sys.stdout)
        print_closing(summaries, thresholds, gates, problems, interrupted, len(records))
    return exit_code(problems, interrupted)
