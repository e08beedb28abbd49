"""Re-scoring stored runs: the calls a score store already holds, judged again by a (new) version
of one of its scorers, the new rows written beside the old ones (`scorewatch rescore`).

A *run* here is one call a scorer scored, however many rows it has by now: its first row (the
*origin*) and every row re-scoring wrote for it, each of which names the origin in
`metadata.rescoredFrom` (`{id, createdAt, scorerVersion, redacted}`). Selecting (`plan_rescore`):

1. read the rows of the scorer id that match the filters (target, `createdAt` window), page by
   page, newest first, and group them by origin; the window is the run's, its origin's time (a
   re-score row written today of a run of last month is outside a window of today). The call is
   read from the origin row when it was read, else from any of its rows
   (`sinks.stored_call.call_of_row`, the one place);
2. keep the `limit` newest runs (by the origin's time, so a rerun selects the same runs);
3. skip the runs the scorer's current version already scored (a row of that version with status
   `success` or `not_scorable`, looked up by id too, so a window that leaves the new rows out
   still finds them) unless `force`; and, with `skip_redacted`, the runs stored redacted.

A new row's id is `rescore-<version>-<origin id>`: one per (run, version), so re-running after a
kill scores only what is missing, and `force` replaces this version's re-score rows, never an
origin row or another version's. A failed re-score is stored as a failed row (never a score)
and is tried again by the next run. The judge reads what the store kept: a run stored under a
privacy policy is judged on its `<EMAIL_1>`-style markers (`StoredRun.redacted`).

Scoring goes through `run_experiment`, batch evaluation's runner, with the runs as its items and
`RescoreWriter` as its `on_result`: the runs can go through any runner that takes items and that
hook (a batch-API runner too) without changing the selection or the rows.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Protocol, Unpack

from ..core.call import AgentCall
from ..core.scorer import Scorer
from ..sinks.base import RunQuery, ScoreSink
from ..sinks.record import RowSource, ScoreRecord, iso_timestamp
from ..sinks.stored_call import call_of_row, row_is_redacted
from .experiment import ExperimentItem, ExperimentResult, OnResult, RunOutcome, run_experiment

__all__ = [
    "DONE_STATUSES",
    "RescorePlan",
    "RescoreSelection",
    "RescoreWriter",
    "StoredRows",
    "StoredRun",
    "plan_rescore",
    "rescore_id",
    "rescore_runs",
]

logger = logging.getLogger("scorewatch.evals.rescore")

DONE_STATUSES: Final = frozenset({"success", "not_scorable"})
"""A row of these statuses means its version has scored the run; a failed one does not."""
_PAGE: Final = 500


class StoredRows(ScoreSink, Protocol):
    """A sink whose rows can be read back by filter and by id (`SqliteSink`, `PostgresSink`)."""

    async def aquery(self, **query: Unpack[RunQuery]) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class RescoreSelection:
    """Which stored runs to score again: the scorer's rows, of `target` when given, created in
    [`since`, `until`), at most the `limit` newest runs."""

    target: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = None
    force: bool = False
    skip_redacted: bool = False


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One run to score again: its origin row's id and time, the version that scored the row
    it is read from, its call, and whether that call's content was stored redacted."""

    origin: str
    created_at: str
    scorer_version: str | None
    call: AgentCall
    redacted: bool
    source: RowSource

    def provenance(self) -> dict[str, Any]:
        """The new row's `metadata.rescoredFrom`."""
        return {
            "id": self.origin,
            "createdAt": self.created_at,
            "scorerVersion": self.scorer_version,
            "redacted": self.redacted,
        }


@dataclass(slots=True)
class RescorePlan:
    """What `plan_rescore` found: the runs to score and how many rows and runs it passed over."""

    scorer_id: str
    version: str
    runs: list[StoredRun] = field(default_factory=list)
    rows_read: int = 0
    runs_selected: int = 0
    skipped_done: int = 0
    skipped_redacted: int = 0

    @property
    def redacted(self) -> int:
        """Runs to score whose content was stored redacted (judged on the markers)."""
        return sum(1 for run in self.runs if run.redacted)

    def items(self) -> list[dict[str, Any]]:
        """The runs as batch-evaluation items (`run_experiment`'s, `estimate_scoring`'s data):
        each its call's fields."""
        return [run.call.to_dict() for run in self.runs]

    def as_json(self) -> dict[str, Any]:
        return {
            "scorer": self.scorer_id,
            "scorer_version": self.version,
            "rows_read": self.rows_read,
            "runs_selected": self.runs_selected,
            "to_score": len(self.runs),
            "skipped_already_scored": self.skipped_done,
            "skipped_redacted": self.skipped_redacted,
            "redacted": self.redacted,
        }


def rescore_id(version: str, origin: str) -> str:
    """The row id of `origin`'s run re-scored by `version`: one per (run, version)."""
    return f"rescore-{version}-{origin}"


@dataclass(slots=True)
class _Run:
    created_at: str
    row: Mapping[str, Any]
    done: bool = False


def _origin_of(row: Mapping[str, Any]) -> tuple[str, str]:
    metadata = row.get("metadata")
    found = metadata.get("rescoredFrom") if isinstance(metadata, Mapping) else None
    if isinstance(found, Mapping) and isinstance(found.get("id"), str):
        return found["id"], str(found.get("createdAt") or row.get("createdAt") or "")
    return str(row["id"]), str(row.get("createdAt") or "")


def _is_done(row: Mapping[str, Any], version: str) -> bool:
    return row.get("scorerVersion") == version and row.get("status") in DONE_STATUSES


async def _read_runs(
    store: StoredRows, scorer_id: str, selection: RescoreSelection, plan: RescorePlan
) -> dict[str, _Run]:
    runs: dict[str, _Run] = {}
    after: tuple[Any, str] | None = None
    # The window is the run's: its first row's time, which a re-score row names.
    low = "" if selection.since is None else iso_timestamp(selection.since)
    high = None if selection.until is None else iso_timestamp(selection.until)
    while True:
        page = await store.aquery(
            scorer=scorer_id,
            target=selection.target,
            since=selection.since,
            until=selection.until,
            after=after,
            limit=_PAGE,
        )
        for row in page:
            plan.rows_read += 1
            origin, created_at = _origin_of(row)
            if not (low <= created_at and (high is None or created_at < high)):
                continue  # a re-score row, written now, of a run outside the window
            run = runs.get(origin)
            if run is None:
                run = runs[origin] = _Run(created_at, row)
            elif row["id"] == origin:
                run.row = row  # the origin's own row: the call as first stored
            run.done = run.done or _is_done(row, plan.version)
        if len(page) < _PAGE:
            return runs
        after = (page[-1]["createdAt"], str(page[-1]["id"]))


async def plan_rescore(
    store: StoredRows, scorer: Scorer, selection: RescoreSelection
) -> RescorePlan:
    """The stored runs of `scorer`'s id that `selection` picks, and which of them to score."""
    plan = RescorePlan(scorer.id, scorer.version_fingerprint)
    runs = await _read_runs(store, scorer.id, selection, plan)
    chosen = sorted(runs.items(), key=lambda pair: (pair[1].created_at, pair[0]), reverse=True)
    if selection.limit is not None:
        chosen = chosen[: selection.limit]
    plan.runs_selected = len(chosen)
    if not selection.force:
        pending = [origin for origin, run in chosen if not run.done]
        done_elsewhere = await _scored_by_id(store, plan.version, pending)
        for origin, run in chosen:
            run.done = run.done or origin in done_elsewhere
        plan.skipped_done = sum(1 for _, run in chosen if run.done)
        chosen = [(origin, run) for origin, run in chosen if not run.done]
    for origin, run in chosen:
        stored = StoredRun(
            origin=origin,
            created_at=run.created_at,
            scorer_version=run.row.get("scorerVersion"),
            call=call_of_row(run.row),
            redacted=row_is_redacted(run.row),
            source="TEST" if run.row.get("source") == "TEST" else "LIVE",
        )
        if stored.redacted and selection.skip_redacted:
            plan.skipped_redacted += 1
        else:
            plan.runs.append(stored)
    return plan


async def _scored_by_id(store: StoredRows, version: str, origins: Sequence[str]) -> set[str]:
    """The origins whose re-score row of `version` exists with a done status (outside the
    window read, or a window that leaves re-scores out)."""
    done: set[str] = set()
    for start in range(0, len(origins), _PAGE):
        wanted = {rescore_id(version, origin): origin for origin in origins[start : start + _PAGE]}
        rows = await store.aquery(ids=list(wanted), limit=len(wanted))
        done.update(wanted[str(row["id"])] for row in rows if _is_done(row, version))
    return done


class RescoreWriter:
    """`run_experiment`'s `on_result` hook for re-scoring: each finished run becomes a new row
    (`rescore_id`) carrying the run's call, its origin (`metadata.rescoredFrom`) and the origin
    row's `source`; a failed run a failed row. A store that refuses the row is counted in
    `store_errors` (and logged), not raised: the other runs go on."""

    def __init__(self, store: ScoreSink, plan: RescorePlan) -> None:
        self.store = store
        self.plan = plan
        self.written = 0
        self.store_errors = 0

    async def __call__(self, outcome: RunOutcome) -> None:
        run = self.plan.runs[outcome.item_index]
        call = dataclasses.replace(
            outcome.call or run.call,
            metadata={**(run.call.metadata or {}), "rescoredFrom": run.provenance()},
        )
        row_id = rescore_id(self.plan.version, run.origin)
        if outcome.result is not None:
            record = ScoreRecord.success(row_id, outcome.scorer, call, outcome.result, run.source)
        else:
            error = outcome.error or RuntimeError("scorer run failed")
            record = ScoreRecord.failure(row_id, outcome.scorer, call, error, run.source)
        try:
            await self.store.write([record])
        except Exception:
            self.store_errors += 1
            logger.exception("the store refused the re-score row %s", row_id)
        else:
            self.written += 1


async def rescore_runs(
    plan: RescorePlan,
    scorer: Scorer,
    writer: RescoreWriter,
    *,
    concurrency: int = 4,
    on_result: OnResult | None = None,
    on_item_complete: Callable[[ExperimentItem], Any] | None = None,
) -> ExperimentResult:
    """Score the plan's runs with `scorer` through `run_experiment`, each result written by
    `writer`, then handed to `on_result` (a progress line, a results file)."""

    async def finished(outcome: RunOutcome) -> None:
        await writer(outcome)
        if on_result is not None:
            called = on_result(outcome)
            if inspect.isawaitable(called):
                await called

    return await run_experiment(
        data=plan.items(),
        scorers=[scorer],
        concurrency=concurrency,
        on_result=finished,
        on_item_complete=on_item_complete,
    )
