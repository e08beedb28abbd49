"""Human labels: a person's verdict on a stored scorer run, kept beside the scores.

A `Label` names the run it judges (its run id, the `id` of the score row), the scorer, the
annotator and the verdict: a `score` on the scorer's scale or a `verdict` (`pass`, `fail` or one
of the scorer's categories), with an optional comment. Its id is derived from (run, scorer,
annotator): the same person labelling the same run again replaces their label, and no label of
another annotator is ever touched.

Labels live in a table of their own, `scorewatch_labels`, in the store that holds the scores
(`SqliteLabelStore` here, `PostgresLabelStore` in `postgres_labels.py`), so agreement joins a
label to the judge's score of the same run. `JsonlLabelStore` appends every label as a line, a
copy for other tools, like `JsonlSink` for scores.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

from .record import iso_timestamp
from .sql import quote

__all__ = [
    "LABEL_COLUMNS",
    "LABEL_TABLE",
    "REVIEW_COLUMNS",
    "JsonlLabelStore",
    "Label",
    "LabelReadings",
    "LabelStore",
    "LabelledRun",
    "ReviewCounts",
    "RunRef",
    "RunResolver",
    "SqliteLabelStore",
    "StoredRun",
    "label_id",
    "label_queries",
    "label_table_sql",
    "labelled_of",
    "review_row",
    "stored_run_of",
]

LABEL_TABLE: Final = "scorewatch_labels"
SCORE_TABLE: Final = "mastra_scorers"

LABEL_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "runId",
    "scorerId",
    "annotator",
    "score",
    "verdict",
    "comment",
    "createdAt",
    "updatedAt",
)


def label_id(run_id: str, scorer_id: str, annotator: str) -> str:
    """The label's id: one label per run, scorer and annotator."""
    digest = hashlib.sha256(
        json.dumps([run_id, scorer_id, annotator], ensure_ascii=True).encode("ascii")
    )
    return digest.hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class LabelReadings:
    """What a label intake (serve's `POST /v1/labels`) reports on the event bus, as a pulled
    reading (`Observers.register_source(LabelReadings, ...)`): `labels`, labels stored per
    scorer id by this process (cumulative); `agreement`, the latest agreement of each scorer
    version with its stored labels, (scorer id, scorer version, measure) -> value; `review`, the
    runs of each scorer's review sample: (scorer id, state) -> count, state `marked`, `labelled`
    or `pending`."""

    labels: Mapping[str, int]
    agreement: Mapping[tuple[str, str, str], float]
    review: Mapping[tuple[str, str], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Label:
    """One person's verdict on one stored run of one scorer."""

    run_id: str
    """The run's id (the score row's `id`)."""
    scorer_id: str
    """The scorer whose run this judges."""
    annotator: str
    """Who gave the label."""
    score: float | None = None
    """The label on the scorer's scale, or None when `verdict` holds it."""
    verdict: str | None = None
    """`pass`, `fail` or a category, or None when `score` holds it."""
    comment: str | None = None
    """Why, in the annotator's words."""
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    """When the label was given."""

    @property
    def id(self) -> str:
        return label_id(self.run_id, self.scorer_id, self.annotator)

    def to_row(self) -> dict[str, Any]:
        stamp = iso_timestamp(self.created_at)
        return {
            "id": self.id,
            "runId": self.run_id,
            "scorerId": self.scorer_id,
            "annotator": self.annotator,
            "score": self.score,
            "verdict": self.verdict,
            "comment": self.comment,
            "createdAt": stamp,
            "updatedAt": stamp,
        }


@dataclass(frozen=True, slots=True)
class RunRef:
    """How a label names its run: by `run_id`, or by target, trace id and span id."""

    scorer_id: str
    run_id: str | None = None
    target: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


@dataclass(frozen=True, slots=True)
class StoredRun:
    """What the store holds of a scored run that a label needs."""

    run_id: str
    scorer_id: str
    target: str | None
    status: str
    score: float | None
    scorer_version: str | None


@dataclass(frozen=True, slots=True)
class LabelledRun:
    """A label joined with the judge's stored score of the same run (for agreement)."""

    label: dict[str, Any]
    """The label row (`LABEL_COLUMNS`)."""
    judge_score: float | None
    scorer_version: str | None
    target: str | None


class LabelStore(Protocol):
    """Where labels are kept. `put` upserts on the label id and returns once stored."""

    name: str

    async def put(self, labels: Sequence[Label]) -> None: ...

    async def aclose(self) -> None: ...


class RunResolver(Protocol):
    """A label store that can find the runs labels name and read labels back."""

    async def resolve(self, refs: Sequence[RunRef]) -> list[StoredRun | None]: ...

    async def labelled(
        self, scorer_id: str, *, since: datetime | None = None
    ) -> list[LabelledRun]: ...

    async def review_pending(self, scorer_id: str, *, limit: int) -> list[dict[str, Any]]: ...

    async def review_counts(self, scorer_id: str) -> ReviewCounts: ...


@dataclass(frozen=True, slots=True)
class ReviewCounts:
    """A scorer's review sample as stored: the runs marked for review when they were scored,
    and how many of them carry a label."""

    marked: int
    labelled: int

    @property
    def pending(self) -> int:
        return self.marked - self.labelled

    def as_dict(self) -> dict[str, int]:
        return {"marked": self.marked, "labelled": self.labelled, "pending": self.pending}


_RUN_COLUMNS: Final = ("id", "scorerId", "target", "status", "score", "scorerVersion")


def stored_run_of(row: Sequence[Any]) -> StoredRun:
    return StoredRun(
        run_id=str(row[0]),
        scorer_id=str(row[1]),
        target=row[2],
        status=str(row[3]),
        score=None if row[4] is None else float(row[4]),
        scorer_version=row[5],
    )


def labelled_of(row: Sequence[Any]) -> LabelledRun:
    label = dict(zip(LABEL_COLUMNS, row[: len(LABEL_COLUMNS)], strict=True))
    for column in ("createdAt", "updatedAt"):
        if isinstance(label[column], datetime):
            label[column] = iso_timestamp(label[column])
    judge_score, version, target = row[len(LABEL_COLUMNS) :]
    return LabelledRun(
        label=label,
        judge_score=None if judge_score is None else float(judge_score),
        scorer_version=version,
        target=target,
    )


REVIEW_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "entityId",
    "traceId",
    "spanId",
    "input",
    "output",
    "score",
    "reason",
    "scorerVersion",
    "createdAt",
)
"""What a review lists of a run: enough for a person to judge it."""


def review_row(row: Sequence[Any], loads: Any) -> dict[str, Any]:
    """A `REVIEW_COLUMNS` row as a dict; `loads` decodes the JSON of input and output."""
    found = dict(zip(REVIEW_COLUMNS, row, strict=True))
    for column in ("input", "output"):
        found[column] = loads(found[column])
    if isinstance(found["createdAt"], datetime):
        found["createdAt"] = iso_timestamp(found["createdAt"])
    return found


def label_queries(labels_sql: str, scores_sql: str, mark: str) -> Mapping[str, str]:
    """The statements both SQL stores run, in their placeholder `mark`."""
    names = ", ".join(quote(c) for c in LABEL_COLUMNS)
    updates = ", ".join(
        f"{quote(c)} = excluded.{quote(c)}" for c in ("score", "verdict", "comment", "updatedAt")
    )
    runs = ", ".join(quote(c) for c in _RUN_COLUMNS)
    label_names = ", ".join(f"l.{quote(c)}" for c in LABEL_COLUMNS)
    labelled_run = (
        f'EXISTS (SELECT 1 FROM {labels_sql} l WHERE l."runId" = s."id" '
        f'AND l."scorerId" = s."scorerId")'
    )
    return {
        "upsert": f"INSERT INTO {labels_sql} ({names}) "
        f"VALUES ({', '.join(mark for _ in LABEL_COLUMNS)}) "
        f"ON CONFLICT ({quote('id')}) DO UPDATE SET {updates}",
        "by_id": f"SELECT {runs} FROM {scores_sql} WHERE {quote('id')} = {mark}",
        "by_trace": f"SELECT {runs} FROM {scores_sql} WHERE {quote('scorerId')} = {mark} "
        f'AND "entityId" = {mark} AND "traceId" = {mark} AND "spanId" = {mark} '
        f'ORDER BY "createdAt" DESC LIMIT 1',
        "labelled": f'SELECT {label_names}, s."score", s."scorerVersion", s."target" '
        f'FROM {labels_sql} l JOIN {scores_sql} s ON s."id" = l."runId" '
        f'WHERE l."scorerId" = {mark} AND l."updatedAt" >= {mark} ORDER BY l."updatedAt", l."id"',
        # The runs of a scorer marked for review when scored that nobody has labelled yet,
        # newest first, and the counts of its marked and labelled runs: both read the partial
        # index of the marked runs (`review_index_sql`), never the rest of the table.
        "review_pending": f"SELECT {', '.join(f's.{quote(c)}' for c in REVIEW_COLUMNS)} "
        f'FROM {scores_sql} s WHERE s."scorerId" = {mark} AND s."reviewSampled" '
        f"AND NOT {labelled_run} "
        f'ORDER BY s."createdAt" DESC, s."id" DESC LIMIT {mark}',
        "review_counts": f"SELECT count(*), COALESCE(sum(CASE WHEN {labelled_run} THEN 1 ELSE 0 "
        f'END), 0) FROM {scores_sql} s WHERE s."scorerId" = {mark} AND s."reviewSampled"',
    }


def label_table_sql(labels_sql: str, prefix: str, *, text: str, real: str, time: str) -> list[str]:
    """The labels table and its index, if missing, in a dialect's column types."""
    types = {"score": real, "createdAt": time, "updatedAt": time}
    required = {"id", "runId", "scorerId", "annotator", "createdAt", "updatedAt"}
    columns = ", ".join(
        f"{quote(c)} {types.get(c, text)}"
        + (" PRIMARY KEY" if c == "id" else " NOT NULL" if c in required else "")
        for c in LABEL_COLUMNS
    )
    index = quote(f"{prefix}_scorer_updated_idx")
    run_index = quote(f"{prefix}_run_idx")
    return [
        f"CREATE TABLE IF NOT EXISTS {labels_sql} ({columns})",
        f'CREATE INDEX IF NOT EXISTS {index} ON {labels_sql} ("scorerId", "updatedAt")',
        f'CREATE INDEX IF NOT EXISTS {run_index} ON {labels_sql} ("runId")',
    ]


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class SqliteLabelStore:
    """Labels in the SQLite database that holds the scores (`SqliteSink`'s file)."""

    name = "sqlite"

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 5000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._sql = label_queries(quote(LABEL_TABLE), quote(SCORE_TABLE), "?")
        conn = self._connect()
        try:
            for statement in label_table_sql(
                quote(LABEL_TABLE), LABEL_TABLE, text="TEXT", real="REAL", time="TEXT"
            ):
                conn.execute(statement)
        finally:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        return conn

    def _put(self, labels: Sequence[Label]) -> None:
        rows = [tuple(label.to_row()[c] for c in LABEL_COLUMNS) for label in labels]
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(self._sql["upsert"], rows)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    async def put(self, labels: Sequence[Label]) -> None:
        """Upsert `labels` in one transaction (all or none)."""
        if labels:
            await asyncio.to_thread(self._put, labels)

    def _resolve(self, refs: Sequence[RunRef]) -> list[StoredRun | None]:
        conn = self._connect()
        try:
            found: list[StoredRun | None] = []
            for ref in refs:
                if ref.run_id is not None:
                    row = conn.execute(self._sql["by_id"], (ref.run_id,)).fetchone()
                else:
                    params = (ref.scorer_id, ref.target, ref.trace_id, ref.span_id)
                    row = conn.execute(self._sql["by_trace"], params).fetchone()
                found.append(None if row is None else stored_run_of(row))
            return found
        finally:
            conn.close()

    async def resolve(self, refs: Sequence[RunRef]) -> list[StoredRun | None]:
        """The stored run each reference names, or None where there is none."""
        return await asyncio.to_thread(self._resolve, refs)

    def _labelled_rows(self, scorer_id: str, *, since: datetime | None = None) -> list[LabelledRun]:
        conn = self._connect()
        try:
            stamp = iso_timestamp(since or _EPOCH)
            rows = conn.execute(self._sql["labelled"], (scorer_id, stamp)).fetchall()
        finally:
            conn.close()
        return [labelled_of(row) for row in rows]

    async def labelled(self, scorer_id: str, *, since: datetime | None = None) -> list[LabelledRun]:
        """Every label of `scorer_id` (updated at or after `since`) with the judge's score."""
        return await asyncio.to_thread(lambda: self._labelled_rows(scorer_id, since=since))

    def _review_rows(self, scorer_id: str, limit: int) -> list[dict[str, Any]]:
        conn = self._connect()
        try:
            rows = conn.execute(self._sql["review_pending"], (scorer_id, limit)).fetchall()
        finally:
            conn.close()
        return [review_row(row, _loads) for row in rows]

    async def review_pending(self, scorer_id: str, *, limit: int) -> list[dict[str, Any]]:
        """At most `limit` runs of `scorer_id` marked for review and not labelled, newest first."""
        return await asyncio.to_thread(self._review_rows, scorer_id, limit)

    def _review_counts(self, scorer_id: str) -> ReviewCounts:
        conn = self._connect()
        try:
            marked, labelled = conn.execute(self._sql["review_counts"], (scorer_id,)).fetchone()
        finally:
            conn.close()
        return ReviewCounts(int(marked), int(labelled))

    async def review_counts(self, scorer_id: str) -> ReviewCounts:
        """How many runs of `scorer_id` are marked for review, and how many are labelled."""
        return await asyncio.to_thread(self._review_counts, scorer_id)

    async def aclose(self) -> None:
        return None


def _loads(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


class JsonlLabelStore:
    """Appends each label as a JSON line (`Label.to_row()`); readers keep the last per id."""

    name = "jsonl"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = asyncio.Lock()

    def _append(self, labels: Sequence[Label]) -> None:
        text = "".join(json.dumps(label.to_row(), ensure_ascii=False) + "\n" for label in labels)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(text)

    async def put(self, labels: Sequence[Label]) -> None:
        if labels:
            async with self._lock:
                await asyncio.to_thread(self._append, labels)

    async def aclose(self) -> None:
        return None
