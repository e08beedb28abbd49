"""`scorewatch rescore --store DSN --scorer ID`: judge stored runs again with a (new) scorer
version and write the new rows beside the old ones.

    scorewatch rescore --store scores.db --scorer mypkg.scorers:tone --since 2026-11-01
    scorewatch rescore --store postgresql://db/scores --scorer faithfulness --limit 500 --estimate

The store is a SQLite file or a PostgreSQL DSN (`--schema` names the schema). The runs are the
stored rows of the scorer's id (filtered by `--target`, `--since`, `--until`, at most `--limit`
runs, newest first); evals/rescore.py says how they are selected, which stored fields form the
call, and how the new rows are named. A run the scorer's current version already scored is
skipped unless `--force`, so rerunning after a kill finishes the job. A run stored under a
privacy policy is judged on its redaction markers; the output counts those (`--skip-redacted`
leaves them out). `--estimate` prints what the selected runs would cost and calls no judge;
`--batch` sends the judge calls through OpenAI's Batch API at the batch price, resumable from
`--batch-state`.

Exit code: 1 when a run failed (unless `--allow-failures`) or the store refused a row; 2 on bad
usage; 130 when interrupted (the rows already written stay: rerun to continue).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import IO, Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError
from ..evals.estimate import estimate_scoring
from ..evals.rescore import (
    RescorePlan,
    RescoreSelection,
    RescoreWriter,
    StoredRows,
    plan_rescore,
    rescore_runs,
)
from ._estimate import print_estimate
from ._eval_output import failure_reasons, print_failures
from ._eval_scorers import CLI_USAGE, load_scorers
from ._scoring_run import (
    ScoringSession,
    add_batch_arguments,
    add_judge_arguments,
    batch_settings,
    concurrency_of,
    exit_code,
    json_summary,
    model_options,
    print_summary_table,
    run_scoring_command,
    verdict,
    whole_number,
)
from ._stores import add_store_arguments, shown_store, store_kind
from ._summary import summarize_records

__all__ = ["add_arguments", "run"]

REDACTED_NOTE = (
    "{count} run(s) were stored redacted: the judge reads their <EMAIL_1>-style markers, not "
    "the original content, so their new scores may differ for that reason alone "
    "(--skip-redacted leaves them out)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_arguments(parser, jsonl=False, what="runs")
    parser.add_argument(
        "--scorer",
        required=True,
        metavar="ID",
        help="the scorer to judge with: a prebuilt scorer's short name, module:factory, or "
        "with --scorers an id of that file; the runs are its id's stored rows",
    )
    parser.add_argument(
        "--scorers", metavar="FILE", help="a TOML file of [[scorers]] in serve's format"
    )
    add_judge_arguments(parser)
    parser.add_argument(
        "--limit", type=whole_number, metavar="N", help="at most the N newest runs of the selection"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="also judge runs this scorer version has scored (replacing its re-score rows)",
    )
    parser.add_argument(
        "--skip-redacted",
        action="store_true",
        help="leave out runs whose content was stored redacted (holds <EMAIL_1>-style markers)",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print the judge calls, tokens and expected cost, and stop: no judge is called",
    )
    parser.add_argument(
        "--concurrency", type=whole_number, default=4, help="runs in flight at once"
    )
    add_batch_arguments(parser)
    parser.add_argument(
        "--allow-failures", action="store_true", help="exit 0 even when runs failed"
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")


def run(args: argparse.Namespace) -> int:
    return run_scoring_command(args, "rescore", _run)


def _scorer(args: argparse.Namespace) -> Scorer:
    options = model_options(args.model_option)
    if args.scorers is None:
        found, _ = load_scorers([args.scorer], None, [], args.model, options)
        return next(iter(found.by_id.values()))
    found, _ = load_scorers([], args.scorers, [], args.model, options)
    return found.by_id[found.resolve(args.scorer, "--scorer")]


def _open_store(args: argparse.Namespace) -> tuple[StoredRows, str]:
    kind, where = store_kind(args.store)
    if kind == "postgresql":
        from ..sinks.postgres import PostgresSink

        return PostgresSink(where, schema=args.schema), kind
    if kind == "jsonl":
        raise ScorewatchError(
            "--store: rescore reads SQLite or PostgreSQL stores, not JSONL files", code=CLI_USAGE
        )
    from ..sinks.sqlite import SqliteSink

    return SqliteSink(where), kind


def _run(args: argparse.Namespace) -> int:
    scorer = _scorer(args)
    store, kind = _open_store(args)
    selection = RescoreSelection(
        target=args.target,
        since=args.since,
        until=args.until,
        limit=args.limit,
        force=args.force,
        skip_redacted=args.skip_redacted,
    )
    outcome = _Outcome()
    try:
        asyncio.run(_rescore(args, store, scorer, selection, outcome))
    except KeyboardInterrupt:
        outcome.interrupted = True
    if outcome.plan is None:
        return 130
    plan = outcome.plan
    where = f"{kind} {shown_store(args.store)}"
    if args.estimate:
        return _print_estimate(args, plan, outcome, where, sys.stdout)
    return _report(args, plan, outcome, where, sys.stdout)


class _Outcome:
    """What one `rescore` run found and did, filled in as it goes (an interruption keeps it)."""

    def __init__(self) -> None:
        self.plan: RescorePlan | None = None
        self.session: ScoringSession | None = None
        self.writer: RescoreWriter | None = None
        self.estimate: Any = None
        self.interrupted = False


async def _rescore(
    args: argparse.Namespace,
    store: StoredRows,
    scorer: Scorer,
    selection: RescoreSelection,
    outcome: _Outcome,
) -> None:
    """Select, then estimate or score, on one event loop (a PostgreSQL pool belongs to one)."""
    try:
        plan = outcome.plan = await plan_rescore(store, scorer, selection)
        if not plan.runs:
            return
        if args.estimate:
            outcome.estimate = await estimate_scoring(plan.items(), [scorer], batch=args.batch)
            return
        batch = batch_settings(args)
        session = outcome.session = ScoringSession(plan.items(), unit="runs", batch=batch)
        writer = outcome.writer = RescoreWriter(store, plan)

        async def rescore() -> Any:
            return await rescore_runs(
                plan,
                scorer,
                writer,
                concurrency=concurrency_of(args, len(plan.runs)),
                on_result=session.on_result,
                on_item_complete=session.on_item,
            )

        try:
            await session.priced(rescore)()
        finally:
            session.progress.finish()
    finally:
        await store.aclose()


def _selection_lines(plan: RescorePlan, where: str) -> list[str]:
    lines = [
        f"rescore {plan.scorer_id} (version {plan.version}) in {where}",
        f"read {plan.rows_read} row(s): {plan.runs_selected} run(s) selected, "
        f"{plan.skipped_done} already scored by this version (skipped; --force judges them "
        f"again), {plan.skipped_redacted} redacted skipped, {len(plan.runs)} to score",
    ]
    if plan.redacted:
        lines.append("note: " + REDACTED_NOTE.format(count=plan.redacted))
    return lines


def _print_estimate(
    args: argparse.Namespace, plan: RescorePlan, outcome: _Outcome, where: str, out: IO[str]
) -> int:
    if args.format == "json":
        estimate = None if outcome.estimate is None else outcome.estimate.as_json()
        print(json.dumps({"selection": plan.as_json(), "estimate": estimate}, indent=2), file=out)
        return 0
    for line in _selection_lines(plan, where):
        print(line, file=out)
    if outcome.estimate is None:
        print("nothing to score; no judge was called", file=out)
    else:
        print_estimate(outcome.estimate, len(plan.runs), out)
    return 0


def _report(
    args: argparse.Namespace, plan: RescorePlan, outcome: _Outcome, where: str, out: IO[str]
) -> int:
    records = outcome.session.records if outcome.session is not None else []
    writer = outcome.writer
    written = writer.written if writer is not None else 0
    refused = writer.store_errors if writer is not None else 0
    summaries = summarize_records(records)
    reasons = failure_reasons(records, {})
    problems = verdict(summaries, {}, [], reasons, args.allow_failures)
    if refused:
        problems.append(f"the store refused {refused} new row(s) (see the log above)")
    failed = sum(s.failures for s in summaries.values())
    cost = sum(s.estimated_cost_usd for s in summaries.values())
    counts = {
        **plan.as_json(),
        "scored": len(records) - failed,
        "failed": failed,
        "rows_written": written,
        "rows_refused": refused,
        "judge_cost_usd": cost,
    }
    if args.format == "json":
        summary = json_summary(summaries, problems, outcome.interrupted, reasons)
        notes = [REDACTED_NOTE.format(count=plan.redacted)] if plan.redacted else []
        print(json.dumps({**summary, "rescore": counts, "notes": notes}, indent=2), file=out)
        return exit_code(problems, outcome.interrupted)
    for line in _selection_lines(plan, where):
        print(line, file=out)
    if records:
        print(file=out)
        print_summary_table(summaries, out)
        print_failures(reasons, out)
    print(
        f"\nscored {counts['scored']}, failed {failed}, skipped {plan.skipped_done} (already "
        f"scored) + {plan.skipped_redacted} (redacted); judge cost ${cost:.4f}",
        file=out,
    )
    print(
        f"wrote {written} row(s) with scorerVersion {plan.version} beside the old ones "
        "(rows of the runs as first scored, and of other versions, are never changed)",
        file=out,
    )
    for problem in problems:
        print(problem, file=out)
    if outcome.interrupted:
        print(
            f"interrupted after {len(records)} run(s): rerun the same command to continue",
            file=out,
        )
    return exit_code(problems, outcome.interrupted)
