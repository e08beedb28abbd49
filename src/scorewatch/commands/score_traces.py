"""`scorewatch score-traces FILE... --scorer NAME ...`: score the agent runs in trace files.

Each FILE is what an OpenTelemetry Collector's `file` exporter writes: one OTLP/JSON export
request per line, gzip-compressed or not. The spans of all the files are assembled together (a
trace may continue in the next file), the selected spans become runs, and the runs are scored as
`scorewatch eval` scores dataset items: the same scorer options, progress line, summary table,
`--out` records and `--sqlite` rows, each carrying the evaluated span's trace and span ids.
With `--sessions`, each conversation (runs naming one with `gen_ai.conversation.id`, or
`--conversation-attribute`) is scored once, as one run of its turns in order (docs/traces.md,
"Conversations"); its rows name the conversation (`threadId`) and its first turn's span.

Every file is read before anything is scored: a line that is not an OTLP export request stops
the command (exit 2, naming the file and line) before any judge is called, unless
`--skip-malformed` says to score the rest. The exit code is 1 when a threshold or gate fails, a
run failed (unless `--allow-failures`), selected spans were lost to the assembly bounds, or
nothing was scored; 2 on bad usage or unreadable data; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from pydantic import ValidationError

from ..core.scorer import Scorer
from ..errors import ScorewatchError
from ..traces import (
    BufferLimits,
    Extraction,
    SpanSelector,
    TraceDataError,
    extract_runs,
    read_file_exporter,
    run_items,
    score_extraction,
)
from . import _scoring_run as scoring
from ._estimate import run_estimate
from ._eval_output import failure_reasons, print_failures
from ._eval_scorers import CLI_USAGE, load_scorers
from ._summary import summarize_records
from ._trace_sessions import add_limit, add_session_arguments, session_limits

__all__ = ["add_arguments", "run"]

_SHOWN_ERRORS = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="Collector `file` exporter output: OTLP/JSON, one export request per line (.gz too)",
    )
    scoring.add_scoring_arguments(parser, unit="span")
    select = parser.add_argument_group(
        "selection",
        "which spans are runs to score: those any selector matches. Without --select or the\n"
        "options below, agent invocations and model calls of every known convention are.\n"
        "A span selected under another selected span is skipped unless --nested.",
    )
    select.add_argument(
        "--select",
        metavar="FILE",
        help="a TOML file whose [[traces.select]] tables are the selectors (serve's format: "
        "operation, service, name, attributes, nested)",
    )
    select.add_argument(
        "--operation",
        action="append",
        default=[],
        metavar="NAME",
        help="a gen_ai.operation.name to select (invoke_agent, chat, ...)",
    )
    select.add_argument(
        "--service", action="append", default=[], metavar="NAME", help="a service.name to select"
    )
    select.add_argument(
        "--span-name", metavar="REGEX", help="a regular expression the whole span name matches"
    )
    select.add_argument(
        "--attribute",
        action="append",
        default=[],
        type=scoring.key_value,
        metavar="KEY=VALUE",
        help="an attribute the span must have (VALUE read as JSON when it parses: 200, true)",
    )
    select.add_argument(
        "--nested", action="store_true", help="also score selected spans under selected spans"
    )
    add_session_arguments(parser)
    reading = parser.add_argument_group("reading")
    reading.add_argument(
        "--skip-malformed",
        action="store_true",
        help="skip lines that are not OTLP export requests (listed on stderr) instead of "
        "stopping before scoring",
    )
    add_limit(
        reading,
        "--max-traces",
        BufferLimits().max_traces,
        "traces held at once while assembling; beyond it the oldest is dropped and its "
        "selected spans are lost, which fails the run",
    )
    add_limit(
        reading,
        "--max-spans-per-trace",
        BufferLimits().max_spans_per_trace,
        "spans kept per trace; later ones are dropped and counted",
    )


def run(args: argparse.Namespace) -> int:
    return scoring.run_scoring_command(args, "score-traces", _run)


def _attribute_value(text: str) -> str | bool | int | float:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, str | bool | int | float) else text


def _file_selectors(path: str) -> list[SpanSelector]:
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ScorewatchError(
            f"--select {path}: cannot read it ({error})", code=CLI_USAGE
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ScorewatchError(f"--select {path}: not TOML ({error})", code=CLI_USAGE) from None
    traces = document.get("traces")
    tables = traces.get("select") if isinstance(traces, dict) else None
    if not isinstance(tables, list) or not tables:
        raise ScorewatchError(f"--select {path}: no [[traces.select]] table", code=CLI_USAGE)
    selectors = []
    for index, table in enumerate(tables):
        try:
            selectors.append(SpanSelector.model_validate(table))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'table'}: {e['msg']}"
                for e in error.errors()
            )
            raise ScorewatchError(
                f"--select {path}: traces.select[{index}]: {problems}", code=CLI_USAGE
            ) from None
    return selectors


def _selectors(args: argparse.Namespace) -> list[SpanSelector] | None:
    """The selectors asked for, or None for the defaults."""
    selectors = _file_selectors(args.select) if args.select else []
    if args.operation or args.service or args.span_name or args.attribute:
        try:
            selectors.append(
                SpanSelector(
                    operation=args.operation or None,
                    service=args.service or None,
                    name=args.span_name,
                    attributes={key: _attribute_value(v) for key, v in args.attribute},
                    nested=args.nested,
                )
            )
        except ValidationError as error:
            message = "; ".join(str(e["msg"]) for e in error.errors())
            raise ScorewatchError(f"--span-name: {message}", code=CLI_USAGE) from None
    elif args.nested:
        raise ScorewatchError(
            "--nested applies to the selection options: add --operation, --service, "
            "--span-name or --attribute (or set nested = true in the --select file)",
            code=CLI_USAGE,
        )
    return selectors or None


class _Reader:
    """The export requests of the files in order, counted; malformed lines kept when skipped."""

    def __init__(self, files: list[Path], skip_malformed: bool) -> None:
        self.files = files
        self.requests = 0
        self.malformed: list[TraceDataError] | None = [] if skip_malformed else None

    def __iter__(self) -> Iterator[ExportTraceServiceRequest]:
        for path in self.files:
            for request in read_file_exporter(path, errors=self.malformed):
                self.requests += 1
                yield request


def _run(args: argparse.Namespace) -> int:
    options = scoring.model_options(args.model_option)
    found, gates = load_scorers(args.scorer, args.scorers, args.gate, args.model, options)
    thresholds = scoring.thresholds_of(found, args.threshold)
    selectors = _selectors(args)
    if args.concurrency < 1:
        raise ScorewatchError("--concurrency must be at least 1", code=CLI_USAGE)
    try:
        limits = BufferLimits(
            max_traces=args.max_traces, max_spans_per_trace=args.max_spans_per_trace
        )
    except ValidationError:
        raise ScorewatchError(
            "--max-traces and --max-spans-per-trace must be at least 1", code=CLI_USAGE
        ) from None
    files = [Path(name) for name in args.files]
    for path in files:
        if not path.is_file():
            raise ScorewatchError(f"{path}: no such file", code=CLI_USAGE)
        if args.out and Path(args.out).resolve() == path.resolve():
            raise ScorewatchError(
                f"--out and {path} are the same file: the run would overwrite it", code=CLI_USAGE
            )
    reader = _Reader(files, args.skip_malformed)
    extraction = extract_runs(
        reader, select=selectors, limits=limits, sessions=session_limits(args)
    )
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(Path(args.out).open("w", encoding="utf-8")) if args.out else None
        return _score(args, reader, extraction, found.by_id, thresholds, gates, out)


def _span_fields(item: Mapping[str, Any]) -> dict[str, Any]:
    """The span an item (a run's call, `run_items`) was read from."""
    return {
        "trace_id": item.get("trace_id"),
        "span_id": item.get("span_id"),
        "span_name": (item.get("metadata") or {}).get("spanName"),
    }


def _score(
    args: argparse.Namespace,
    reader: _Reader,
    extraction: Extraction,
    scorers: dict[str, Scorer],
    thresholds: dict[str, float],
    gates: list[str],
    out: IO[str] | None,
) -> int:
    counts = _trace_counts(reader, extraction)
    if reader.malformed:
        _print_malformed(reader.malformed, sys.stderr)
    items = run_items(extraction)
    if args.estimate:
        return run_estimate(
            items,
            list(scorers.values()),
            repeat=1,
            output_format=args.format,
            out=sys.stdout,
            batch=args.batch,
        )
    session = scoring.ScoringSession(
        items,
        sqlite=args.sqlite,
        out=out,
        record_fields=_span_fields,
        unit="spans",
        batch=scoring.batch_settings(args),
    )
    interrupted = False
    if items:
        interrupted = session.run(
            lambda: score_extraction(
                list(scorers.values()),
                extraction,
                concurrency=scoring.concurrency_of(args, len(items)),
                on_result=session.on_result,
                on_item_complete=session.on_item,
                privacy=scoring.privacy_policy(args),
            )
        )
    records = session.records
    summaries = summarize_records(records)
    reasons = failure_reasons(records, {})
    problems = scoring.verdict(summaries, thresholds, gates, reasons, args.allow_failures)
    problems.extend(session.store_problems())
    lost = sum(counts["lost_selected"].values())
    if lost:
        problems.append(
            f"{lost} selected span(s) lost to the assembly bounds "
            f"({_reasons(counts['lost_selected'])}); raise --max-traces"
        )
    if not items and not lost:
        problems.append(
            "nothing scored: no selected span had content to score (is content capture on in "
            "the agent? does the selection match its spans?)"
        )
    if args.format == "json":
        summary = scoring.json_summary(summaries, problems, interrupted, reasons)
        print(json.dumps({**summary, "traces": counts}, indent=2))
    else:
        _print_counts(counts, sys.stdout)
        scoring.print_summary_table(summaries, sys.stdout)
        print_failures(reasons, sys.stdout)
        scoring.print_closing(summaries, thresholds, gates, problems, interrupted, len(records))
    return scoring.exit_code(problems, interrupted)


def _trace_counts(reader: _Reader, extraction: Extraction) -> dict[str, Any]:
    """What was read and what became of each span, for the summary (and `--format json`)."""
    buffer = extraction.buffer
    skipped = dict(extraction.skipped)
    lost = dict(buffer.lost_selected)
    sessions = extraction.sessions
    # Read as sessions, a selected span is a turn: kept in a session, or dropped by its bounds.
    scored = len(extraction.runs) if sessions is None else sessions.turns
    selected = scored + sum(skipped.values()) + sum(lost.values())
    dropped = sum(buffer.spans_dropped.values())
    found: dict[str, Any] = {}
    if sessions is not None:
        found["sessions"] = {"scored": len(extraction.runs), **sessions.outcomes()}
    return {
        **found,
        "files": len(reader.files),
        "requests": reader.requests,
        "malformed_lines": len(reader.malformed or []),
        "spans_read": buffer.spans_received,
        "selected": selected,
        "scored": len(extraction.runs),
        "skipped": skipped,
        "not_selected": buffer.spans_received - dropped - selected,
        "spans_dropped": dict(buffer.spans_dropped),
        "traces_evicted": dict(buffer.traces_evicted),
        "lost_selected": lost,
    }


def _reasons(counter: Mapping[str, int]) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in sorted(counter.items()))


def _print_counts(counts: dict[str, Any], stream: IO[str]) -> None:
    malformed = counts["malformed_lines"]
    print(
        f"read {counts['files']} file(s): {counts['requests']} export request(s), "
        f"{counts['spans_read']} span(s)"
        + (f", {malformed} malformed line(s) skipped" if malformed else ""),
        file=stream,
    )
    skipped, lost = counts["skipped"], counts["lost_selected"]
    print(
        f"selected {counts['selected']} span(s): {counts['scored']} scored"
        + (f", {sum(skipped.values())} skipped ({_reasons(skipped)})" if skipped else "")
        + (f", {sum(lost.values())} lost ({_reasons(lost)})" if lost else "")
        + f"; {counts['not_selected']} not selected",
        file=stream,
    )
    for title, key in (("dropped spans", "spans_dropped"), ("evicted traces", "traces_evicted")):
        if counts[key]:
            print(f"{title}: {_reasons(counts[key])}", file=stream)
    sessions = dict(counts.get("sessions") or {})
    if sessions:
        made = sessions.pop("scored")
        print(f"{made} conversation(s) as sessions: {_reasons(sessions)}", file=stream)
    print(file=stream)


def _print_malformed(errors: list[TraceDataError], stream: IO[str]) -> None:
    print(f"skipped {len(errors)} malformed line(s):", file=stream)
    for error in errors[:_SHOWN_ERRORS]:
        print(f"  {error.message}", file=stream)
    if len(errors) > _SHOWN_ERRORS:
        print(f"  … and {len(errors) - _SHOWN_ERRORS} more", file=stream)
