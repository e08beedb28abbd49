"""`scorewatch eval DATA --scorer NAME ...`: score a dataset and gate CI on the result.

Results are appended to `--out` (JSONL) as each (item, scorer) run finishes, so an interrupted
run keeps what it finished. The exit code is 1 when a threshold or gate fails, 2 on bad usage,
130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import IO, Any

from ..core.hooks import add_run_observer, remove_run_observer
from ..core.scorer import Scorer
from ..errors import ScorewatchError
from ..evals import ExperimentItem, RunOutcome, run_experiment
from ..evals.dataset_file import load_dataset
from ..evals.records import EstimatedCostCollector, outcome_record
from ..evals.report_html import render_report
from ..evals.summary import ScorerSummary, summarize_records
from ._progress import Progress
from ._scorer_args import import_object, resolve_scorer

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
        required=True,
        help="a prebuilt scorer's short name (see `scorewatch scorers`) or module:factory",
    )
    parser.add_argument("--gate", action="append", default=[], help="a scorer whose mean must be 1")
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
    parser.add_argument("--out", help="append per-item results here (JSONL)")
    parser.add_argument(
        "--sqlite", help="also store every result in this SQLite file (the live sink's rows)"
    )
    parser.add_argument(
        "--threshold",
        action="append",
        default=[],
        type=_key_value,
        metavar="SCORER=MIN",
        help="fail (exit 1) when the scorer's mean is below MIN",
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
    names = list(dict.fromkeys([*args.scorer, *args.gate]))
    scorers: dict[str, Scorer] = {name: resolve_scorer(name, args.model, options) for name in names}
    thresholds: dict[str, float] = {}
    for name, value in args.threshold:
        if name not in scorers:
            raise ScorewatchError(
                f"--threshold names {name!r}, which is not among the --scorer values",
                code="SCOREWATCH_CLI_USAGE",
            )
        try:
            thresholds[scorers[name].id] = float(value)
        except ValueError:
            raise ScorewatchError(
                f"--threshold {name}={value}: not a number", code="SCOREWATCH_CLI_USAGE"
            ) from None
    gates = [scorers[name].id for name in args.gate]
    target = import_object(args.target) if args.target else None
    data = load_dataset(args.data, need_output=target is None)

    with contextlib.ExitStack() as stack:
        out = stack.enter_context(Path(args.out).open("a", encoding="utf-8")) if args.out else None
        return _evaluate(args, data, scorers, target, thresholds, gates, out)


def _evaluate(
    args: argparse.Namespace,
    data: list[dict[str, Any]],
    scorers: dict[str, Scorer],
    target: Any,
    thresholds: dict[str, float],
    gates: list[str],
    out: IO[str] | None,
) -> int:
    records: list[dict[str, Any]] = []
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
        failed = sum(1 for r in item.results.values() if r.error) + (1 if item.target_error else 0)
        progress.advance(failures=failed)

    interrupted = False
    add_run_observer(costs)
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
        remove_run_observer(costs)
        if store is not None:
            asyncio.run(store.aclose())
        progress.finish()

    summaries = summarize_records(records)
    problems = _verdict(summaries, thresholds, gates)
    if args.html:
        scales = {scorer.id: float(scorer.scale) for scorer in scorers.values()}
        Path(args.html).write_text(render_report(records, scales=scales), encoding="utf-8")
    if args.format == "json":
        print(json.dumps(_json_summary(summaries, problems, interrupted), indent=2))
    else:
        _print_table(summaries, sys.stdout)
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
    summaries: dict[str, ScorerSummary], problems: list[str], interrupted: bool
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
                "judge_calls": s.judge_calls,
                "tokens": s.tokens,
                "estimated_cost_usd": s.estimated_cost_usd if s.has_cost else None,
            }
            for s in summaries.values()
        },
        "problems": problems,
        "passed": not problems and not interrupted,
        "interrupted": interrupted,
    }
