"""`scorewatch eval DATA --scorer NAME ...`: score a dataset and gate CI on the result.

Results are written to `--out` (JSONL, replacing an earlier file) as each (item, scorer) run
finishes, so an interrupted run keeps what it finished. The exit code is 1 when a threshold or
gate fails, a run failed (unless `--allow-failures`) or the run regressed against `--baseline`;
2 on bad usage; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
from pathlib import Path
from typing import IO, Any

from ..core.events import OBSERVERS
from ..core.scorer import Scorer
from ..errors import ScorewatchError
from ..evals import ExperimentItem, RunOutcome, run_experiment
from ..evals.compare import DEFAULT_MAX_DROP, Comparison, compare_records
from ..evals.dataset_file import load_dataset
from ..evals.records import EstimatedCostCollector, outcome_record, read_results
from ..evals.report_html import render_report
from ..evals.summary import ScorerSummary, summarize_records
from ._eval_output import failure_reasons, print_comparison, print_failures
from ._eval_scorers import CLI_USAGE, load_scorers
from ._progress import Progress
from ._scorer_args import import_object

__all__ = ["add_arguments", "run"]


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return key, value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", help="dataset file: .jsonl or .csv with input, output, ...")
    parser.add_argument(
        "--scorer",
        action="append",
        default=[],
        help="a prebuilt scorer's short name (see `scorewatch scorers`) or module:factory",
    )
    parser.add_argument(
        "--scorers",
        metavar="FILE",
        help="a TOML file of [[scorers]] (and [judge]) in serve's format, for scorers that take "
        "options (context, reference text, tools, rubric)",
    )
    parser.add_argument(
        "--gate", action="append", default=[], help="a scorer (name or id) whose mean must be 1"
    )
    parser.add_argument("--model", help="judge model for LLM-judged scorers (a litellm model id)")
    parser.add_argument(
        "--model-option",
        action="append",
        default=[],
        type=_key_value,
        metavar="KEY=VALUE",
        help="judge model option, e.g. api_base=http://127.0.0.1:8000/v1 or timeout=30",
    )
    parser.add_argument("--target", help="module:callable producing each item's output")
    parser.add_argument("--concurrency", type=int, default=4, help="items in flight at once")
    parser.add_argument(
        "--out", help="write per-item results here (JSONL); an existing file is replaced"
    )
    parser.add_argument(
        "--sqlite", help="also store every result in this SQLite file (the live sink's rows)"
    )
    parser.add_argument(
        "--threshold",
        action="append",
        default=[],
        type=_key_value,
        metavar="SCORER=MIN",
        help="fail (exit 1) when the scorer's mean is below MIN; SCORER is the id the summary "
        "table prints (or the --scorer value)",
    )
    parser.add_argument(
        "--allow-failures",
        action="store_true",
        help="exit 0 even when runs failed (judge errors, step errors, target errors)",
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="an earlier run's --out file: show mean deltas and the items that regressed or "
        "improved, and fail on a regression beyond --max-drop",
    )
    parser.add_argument(
        "--max-drop",
        type=float,
        default=DEFAULT_MAX_DROP,
        metavar="SHARE",
        help="with --baseline: the largest allowed drop of a scorer's mean, as a share of its "
        f"scale (default {DEFAULT_MAX_DROP})",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--html", help="also write a self-contained HTML report here")
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export spans, metrics and evaluation events over OTLP (standard OTEL_* variables); "
        "without it they are exported only when OTEL_EXPORTER_OTLP_*ENDPOINT or "
        "OTEL_*_EXPORTER ask for it",
    )


def _model_options(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, value in pairs:
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _print_table(summaries: dict[str, ScorerSummary], stream: IO[str]) -> None:
    header = ("scorer", "runs", "mean", "p10", "p50", "p90", "fail", "calls", "tokens", "est. cost")
    rows = []
    for s in summaries.values():
        quantiles = s.quantiles()
        rows.append(
            (
                s.scorer_id,
                str(s.runs),
                *("–" if v is None else f"{v:.3f}" for v in (s.mean, *quantiles)),
                str(s.failures),
                str(s.judge_calls),
                str(s.tokens),
                f"${s.estimated_cost_usd:.4f}" if s.has_cost else "–",
            )
        )
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(
            "  ".join(str(cell).rjust(w) for cell, w in zip(row, widths, strict=True)), file=stream
        )


def _verdict(
    summaries: dict[str, ScorerSummary], thresholds: dict[str, float], gates: list[str]
) -> list[str]:
    problems = []
    for scorer_id, minimum in thresholds.items():
        mean = summaries[scorer_id].mean if scorer_id in summaries else None
        if mean is None or mean < minimum:
            problems.append(f"threshold failed: {scorer_id} mean {mean} < {minimum}")
    for scorer_id in gates:
        mean = summaries[scorer_id].mean if scorer_id in summaries else None
        if mean is None or mean < 1.0:
            problems.append(f"gate failed: {scorer_id} mean {mean} < 1")
    return problems


def run(args: argparse.Namespace) -> int:
    handle = _export_telemetry(bool(getattr(args, "otel", False)))
    try:
        return _run(args)
    except ScorewatchError as error:
        print(f"scorewatch eval: {error.message}", file=sys.stderr)
        return 2
    finally:
        if handle is not None:
            handle.shutdown()  # flushes what the runs exported


def _export_telemetry(forced: bool) -> Any:
    """OpenTelemetry for this run when asked (`--otel`, or the standard variables), else None."""
    from .. import telemetry

    if not forced and not telemetry.exports_requested():
        return None
    return telemetry.configure(
        service_name="scorewatch-eval", prometheus=None, otlp=True if forced else None
    )


def _run(args: argparse.Namespace) -> int:
    options = _model_options(args.model_option)
    found, gates = load_scorers(args.scorer, args.scorers, args.gate, args.model, options)
    thresholds: dict[str, float] = {}
    for name, value in args.threshold:
        scorer_id = found.resolve(name, "--threshold")
        try:
            minimum = float(value)
        except ValueError:
            minimum = math.nan
        if not math.isfinite(minimum):
            raise ScorewatchError(f"--threshold {name}={value}: not a number", code=CLI_USAGE)
        thresholds[scorer_id] = minimum
    baseline = read_results(args.baseline) if args.baseline else None
    if args.out:
        for flag, other in (("--baseline", args.baseline), ("the dataset", args.data)):
            if other and Path(args.out).resolve() == Path(other).resolve():
                raise ScorewatchError(
                    f"--out and {flag} are the same file: the run would overwrite it",
                    code=CLI_USAGE,
                )
    target = import_object(args.target) if args.target else None
    data = load_dataset(args.data, need_output=target is None)

    with contextlib.ExitStack() as stack:
        out = stack.enter_context(Path(args.out).open("w", encoding="utf-8")) if args.out else None
        return _evaluate(args, data, found.by_id, target, thresholds, gates, out, baseline)


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
    records: list[dict[str, Any]] = []
    target_failures: dict[int, str] = {}
    progress = Progress(len(data))
    costs = EstimatedCostCollector()
    store = _sqlite_writer(args.sqlite, data)

    async def on_result(outcome: RunOutcome) -> None:
        if store is not None:
            await store(outcome)
        record = outcome_record(outcome, data[outcome.item_index], costs.pop(_run_id_of(outcome)))
        records.append(record)
        if out is not None:
            out.write(json.dumps(record, default=str) + "\n")
            out.flush()

    def on_item(item: ExperimentItem) -> None:
        if item.target_error is not None:
            target_failures[item.index] = item.target_error
        failed = sum(1 for r in item.results.values() if r.error) + (1 if item.target_error else 0)
        progress.advance(failures=failed)

    interrupted = False
    OBSERVERS.add(costs)
    try:
        asyncio.run(
            run_experiment(
                data=data,
                target=target,
                scorers=list(scorers.values()),
                concurrency=args.concurrency,
                on_item_complete=on_item,
                on_result=on_result,
            )
        )
    except KeyboardInterrupt:
        interrupted = True
    finally:
        OBSERVERS.remove(costs)
        if store is not None:
            asyncio.run(store.aclose())
        progress.finish()

    summaries = summarize_records(records)
    problems = _verdict(summaries, thresholds, gates)
    reasons = failure_reasons(records, target_failures)
    if reasons and not args.allow_failures:
        count = sum(len(reason["items"]) for reason in reasons)
        problems.append(f"{count} run(s) failed (pass --allow-failures to accept failed runs)")
    comparison = (
        compare_records(baseline, records, max_drop=args.max_drop) if baseline is not None else None
    )
    if comparison is not None:
        problems.extend(comparison.problems())
    if args.html:
        Path(args.html).write_text(render_report(records, comparison=comparison), encoding="utf-8")
    if args.format == "json":
        print(
            json.dumps(
                _json_summary(summaries, problems, interrupted, reasons, comparison), indent=2
            )
        )
    else:
        _print_table(summaries, sys.stdout)
        print_failures(reasons, sys.stdout)
        if comparison is not None:
            print_comparison(comparison, sys.stdout)
        for problem in problems:
            print(problem)
        if interrupted:
            print(f"interrupted: the summary covers the {len(records)} runs that finished")
    if interrupted:
        return 130
    return 1 if problems else 0


def _sqlite_writer(path: str | None, data: list[dict[str, Any]]) -> Any:
    if not path:
        return None
    from ..live import ExperimentSinkWriter, SqliteSink

    return ExperimentSinkWriter([SqliteSink(path)], data)


def _run_id_of(outcome: RunOutcome) -> str | None:
    if outcome.result is not None:
        return outcome.result.run_id
    snapshot = getattr(outcome.error, "result", None)
    return getattr(snapshot, "run_id", None)


def _json_summary(
    summaries: dict[str, ScorerSummary],
    problems: list[str],
    interrupted: bool,
    failures: list[dict[str, Any]],
    comparison: Comparison | None,
) -> dict[str, Any]:
    return {
        "scorers": {
            s.scorer_id: {
                "runs": s.runs,
                "mean": s.mean,
                "p10": s.quantiles()[0],
                "p50": s.quantiles()[1],
                "p90": s.quantiles()[2],
                "failures": s.failures,
                "not_scorable": s.not_scorable,
                "judge_calls": s.judge_calls,
                "tokens": s.tokens,
                "estimated_cost_usd": s.estimated_cost_usd if s.has_cost else None,
            }
            for s in summaries.values()
        },
        "failures": failures,
        "comparison": comparison.to_dict() if comparison is not None else None,
        "problems": problems,
        "passed": not problems and not interrupted,
        "interrupted": interrupted,
    }
