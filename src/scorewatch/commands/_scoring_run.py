"""What `scorewatch eval` and `scorewatch score-traces` share: the scoring options, the
bookkeeping of a run (records, `--out`, `--sqlite`, the progress line), the summary
table and the verdict. One command scores dataset items, the other spans read from traces; both
hand their items to `run_experiment`, so everything after that is the same code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from ..errors import ScorewatchError
from ..evals import ExperimentItem, RunOutcome
from ..evals.batched import BatchSettings, score_items_batched
from ..evals.compare import Comparison
from ..privacy import KINDS, PrivacyPolicy
from ._eval_scorers import CLI_USAGE, EvalScorers
from ._progress import Progress
from ._results_file import outcome_record
from ._summary import ScorerSummary

__all__ = [
    "ScoringSession",
    "add_batch_arguments",
    "add_judge_arguments",
    "add_scoring_arguments",
    "batch_settings",
    "checks_passed",
    "concurrency_of",
    "exit_code",
    "json_summary",
    "key_value",
    "model_options",
    "print_closing",
    "print_summary_table",
    "run_scoring_command",
    "thresholds_of",
    "verdict",
    "whole_number",
]


def whole_number(text: str) -> int:
    """A count from the command line (`--repeat`, `--limit`): a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return key, value


def print_closing(
    summaries: dict[str, ScorerSummary],
    thresholds: dict[str, float],
    gates: list[str],
    problems: Sequence[str],
    interrupted: bool,
    finished: int,
) -> None:
    """The closing lines of a text summary: the checks that passed, each problem, and an
    interruption (the summary then covers only the runs that finished)."""
    for line in checks_passed(summaries, thresholds, gates):
        print(line)
    for problem in problems:
        print(problem)
    if interrupted:
        print(f"interrupted: the summary covers the {finished} runs that finished")


def exit_code(problems: Sequence[str], interrupted: bool) -> int:
    """130 for an interrupted run (as a shell reports SIGINT), 1 for a problem, else 0."""
    if interrupted:
        return 130
    return 1 if problems else 0


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """`--model` and `--model-option KEY=VALUE`: the judge of LLM-judged scorers."""
    parser.add_argument("--model", help="judge model for LLM-judged scorers (a litellm model id)")
    parser.add_argument(
        "--model-option",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="judge model option, e.g. api_base=http://127.0.0.1:8000/v1 or timeout=30",
    )


def add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    """`--batch`, `--batch-state` and `--batch-poll`: judge calls at the Batch API's price."""
    parser.add_argument(
        "--batch",
        action="store_true",
        help="send the judge calls through OpenAI's Batch API at the batch price: one batch "
        "per scorer step over all items; resumable after a kill (see --batch-state)",
    )
    parser.add_argument(
        "--batch-state",
        metavar="FILE",
        help="with --batch: the state file naming the submitted batches, read again by a "
        "restarted run so nothing is submitted twice (default: --out's path + "
        "'.batch-state.json', else scorewatch-batch-state.json)",
    )
    parser.add_argument(
        "--batch-poll",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="with --batch: seconds between status polls of a submitted batch (default 30)",
    )


def add_scoring_arguments(parser: argparse.ArgumentParser, *, unit: str = "item") -> None:
    """The options both commands take, spelled the same; `unit` names what is scored."""
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
    add_judge_arguments(parser)
    parser.add_argument("--concurrency", type=int, default=4, help=f"{unit}s in flight at once")
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print the judge calls, tokens and expected cost, and stop: no judge is called",
    )
    parser.add_argument(
        "--out", help=f"write per-{unit} results here (JSONL); an existing file is replaced"
    )
    add_batch_arguments(parser)
    parser.add_argument(
        "--sqlite", help="also store every result in this SQLite file (the live sink's rows)"
    )
    parser.add_argument(
        "--threshold",
        action="append",
        default=[],
        type=key_value,
        metavar="SCORER=MIN",
        help="fail (exit 1) when the scorer's mean is below MIN; SCORER is the id the summary "
        "table prints (or the --scorer value)",
    )
    parser.add_argument(
        "--allow-failures",
        action="store_true",
        help="exit 0 even when runs failed (judge errors, step errors, target errors)",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--redact",
        action="append",
        default=[],
        choices=(*KINDS, "all"),
        help="personal data to redact from every stored and exported result (repeatable); the "
        "judge still reads the content as it is",
    )
    parser.add_argument(
        "--redact-pattern",
        action="append",
        default=[],
        type=key_value,
        metavar="NAME=REGEX",
        help="also redact matches of REGEX, as <NAME_1>, <NAME_2>, ...",
    )
    parser.add_argument(
        "--phone-region",
        default="US",
        metavar="CC",
        help="the region whose phone numbers may be written without +country (default US)",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export spans, metrics and evaluation events over OTLP (standard OTEL_* variables); "
        "without it they are exported only when OTEL_EXPORTER_OTLP_*ENDPOINT or "
        "OTEL_*_EXPORTER ask for it",
    )


def privacy_policy(args: argparse.Namespace) -> PrivacyPolicy | None:
    """The policy `--redact`, `--redact-pattern` and `--phone-region` describe (None: none)."""
    if not args.redact and not args.redact_pattern:
        return None
    try:
        return PrivacyPolicy(
            redact=args.redact,
            patterns=dict(args.redact_pattern),
            phone_region=args.phone_region or None,
        )
    except ValidationError as error:
        problems = "; ".join(e["msg"] for e in error.errors())
        raise ScorewatchError(f"--redact options: {problems}", code=CLI_USAGE) from None


def batch_settings(args: argparse.Namespace) -> BatchSettings | None:
    """What `--batch`, `--batch-state` and `--batch-poll` ask for (None without `--batch`); the
    state file defaults to `--out`'s path + `.batch-state.json` for a command that has one."""
    if not args.batch:
        if args.batch_state:
            raise ScorewatchError("--batch-state needs --batch", code=CLI_USAGE)
        return None
    if not math.isfinite(args.batch_poll) or args.batch_poll <= 0:
        raise ScorewatchError("--batch-poll must be a number of seconds > 0", code=CLI_USAGE)
    if args.batch_state:
        state = Path(args.batch_state)
    elif getattr(args, "out", None):
        state = Path(f"{args.out}.batch-state.json")
    else:
        state = Path("scorewatch-batch-state.json")
    return BatchSettings(state_path=state, poll_interval=args.batch_poll)


def concurrency_of(args: argparse.Namespace, items: int) -> int:
    """Items in flight: `--concurrency`, or all of them with `--batch` (the items in flight
    together are what one batch holds)."""
    return max(items, 1) if args.batch else int(args.concurrency)


def model_options(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, value in pairs:
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def thresholds_of(found: EvalScorers, pairs: list[tuple[str, str]]) -> dict[str, float]:
    """`--threshold SCORER=MIN` values by scorer id; a usage error for a non-number."""
    thresholds: dict[str, float] = {}
    for name, value in pairs:
        scorer_id = found.resolve(name, "--threshold")
        try:
            minimum = float(value)
        except ValueError:
            minimum = math.nan
        if not math.isfinite(minimum):
            raise ScorewatchError(f"--threshold {name}={value}: not a number", code=CLI_USAGE)
        thresholds[scorer_id] = minimum
    return thresholds


def run_scoring_command(
    args: argparse.Namespace, command: str, body: Callable[[argparse.Namespace], int]
) -> int:
    """Run `scorewatch <command>`'s `body` with OpenTelemetry exported when asked (`--otel`, or
    the standard variables); a scorewatch error goes on to `cli.main`, which prints it and exits
    2. Shutting the exporters down at the end flushes what the runs exported."""
    handle = _export_telemetry(bool(getattr(args, "otel", False)), f"scorewatch-{command}")
    try:
        return body(args)
    finally:
        if handle is not None:
            handle.shutdown()


def _export_telemetry(forced: bool, service_name: str) -> Any:
    from .. import telemetry

    if not forced and not telemetry.exports_requested():
        return None
    return telemetry.configure(
        service_name=service_name, prometheus=None, otlp=True if forced else None
    )


class ScoringSession:
    """The bookkeeping of one command-line scoring run over `data` (the experiment's items).

    Each finished (item, scorer) run becomes a record (written to `out` at once, so an
    interrupted run keeps what it finished) and, with `sqlite`, a row of the live sink;
    `record_fields` adds fields of the item to its records. Each finished item advances the
    progress line, which counts `unit`."""

    def __init__(
        self,
        data: list[dict[str, Any]],
        *,
        sqlite: str | None = None,
        out: IO[str] | None = None,
        record_fields: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
        unit: str = "items",
        batch: BatchSettings | None = None,
    ) -> None:
        self.data = data
        self.batch = batch
        self.records: list[dict[str, Any]] = []
        self.target_failures: dict[int, str] = {}
        self.progress = Progress(len(data), unit=unit)
        self._out = out
        self._record_fields = record_fields
        self._store: Any = None
        if sqlite:
            from ..evals import ExperimentSinkWriter
            from ..sinks import SqliteSink

            self._store = ExperimentSinkWriter([SqliteSink(sqlite)], data)

    async def on_result(self, outcome: RunOutcome) -> None:
        if self._store is not None:
            await self._store(outcome)
        item = self.data[outcome.item_index]
        record = outcome_record(outcome, item)
        if self._record_fields is not None:
            record.update(self._record_fields(item))
        self.records.append(record)
        if self._out is not None:
            self._out.write(json.dumps(record, default=str) + "\n")
            self._out.flush()

    def store_problems(self) -> list[str]:
        """The problem of results that `--sqlite` did not store (each logged with its error):
        a run that scored but kept nothing must not pass."""
        errors = 0 if self._store is None else sum(self._store.errors.values())
        if not errors:
            return []
        return [f"{errors} result(s) not stored in the --sqlite database (the log says why)"]

    def on_item(self, item: ExperimentItem) -> None:
        if item.target_error is not None:
            self.target_failures[item.index] = item.target_error
        failed = sum(1 for r in item.results.values() if r.error) + (1 if item.target_error else 0)
        self.progress.advance(failures=failed)

    def priced(self, experiment: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        """`experiment`, or with `batch` the same run with its judge calls sent through the
        Batch API (progress of the batches on stderr)."""
        settings = self.batch
        if settings is None:
            return experiment

        def batched() -> Awaitable[Any]:
            return score_items_batched(experiment, settings, report=_report)

        return batched

    def run(self, experiment: Callable[[], Awaitable[Any]]) -> bool:
        """Run the experiment (whose hooks are `on_result` and `on_item`) to the end; True when
        it was interrupted (Ctrl-C), the records then holding the runs that finished."""
        try:
            asyncio.run(_awaited(self.priced(experiment)))
        except KeyboardInterrupt:
            return True
        finally:
            if self._store is not None:
                asyncio.run(self._store.aclose())
            self.progress.finish()
        return False


def _report(line: str) -> None:
    print(f"scorewatch: {line}", file=sys.stderr, flush=True)


async def _awaited(experiment: Callable[[], Awaitable[Any]]) -> Any:
    return await experiment()


def print_summary_table(summaries: dict[str, ScorerSummary], stream: IO[str]) -> None:
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


def _checks(
    summaries: dict[str, ScorerSummary], thresholds: dict[str, float], gates: list[str]
) -> list[tuple[bool, str]]:
    """Each threshold and gate, whether it passed, and its line: means rounded as the table
    rounds them, `no score` when no run was scored."""
    lines = []
    for kind, scorer_id, minimum in [
        *(("threshold", scorer_id, minimum) for scorer_id, minimum in thresholds.items()),
        *(("gate", scorer_id, 1.0) for scorer_id in gates),
    ]:
        mean = summaries[scorer_id].mean if scorer_id in summaries else None
        passed = mean is not None and mean >= minimum
        if mean is None:
            lines.append((False, f"{kind} failed: {scorer_id} has no score (needs {minimum:g})"))
        else:
            sign = ">=" if passed else "<"
            outcome = "passed" if passed else "failed"
            lines.append(
                (passed, f"{kind} {outcome}: {scorer_id} mean {mean:.3f} {sign} {minimum:g}")
            )
    return lines


def checks_passed(
    summaries: dict[str, ScorerSummary], thresholds: dict[str, float], gates: list[str]
) -> list[str]:
    """The thresholds and gates that passed, confirmed one per line."""
    return [line for passed, line in _checks(summaries, thresholds, gates) if passed]


def verdict(
    summaries: dict[str, ScorerSummary],
    thresholds: dict[str, float],
    gates: list[str],
    failures: list[dict[str, Any]],
    allow_failures: bool,
) -> list[str]:
    """What makes the run fail (exit 1): thresholds, gates, and failed runs unless allowed."""
    problems = [line for passed, line in _checks(summaries, thresholds, gates) if not passed]
    if failures and not allow_failures:
        count = sum(len(reason["items"]) for reason in failures)
        problems.append(f"{count} run(s) failed (pass --allow-failures to accept failed runs)")
    return problems


def json_summary(
    summaries: dict[str, ScorerSummary],
    problems: list[str],
    interrupted: bool,
    failures: list[dict[str, Any]],
    comparison: Comparison | None = None,
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
