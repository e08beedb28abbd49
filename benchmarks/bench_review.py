"""What `GET /v1/review` costs the store, with the review sample stored or found again.

    .venv/bin/python benchmarks/bench_review.py [-o result.json] [--runs 100000] [--rate 0.02]

A SQLite score table of `--runs` runs of one scorer (one a second, newest last), of which the
review sample (`--rate`, chosen from the run id) is marked when the runs are stored, as serve's
engine marks them, and every other marked run carries a label. Measured, interleaved, the
median of `--repeats`: the store work of one review request (the first 50 pending runs and the
counts of the sample) done as it is now, from the marks and their partial index, and as it was
done before the marks were stored: the newest 10,000 unlabelled runs read and the run-id hash
applied to each. Reported with each way's pending count (the scan sees only what its 10,000
rows hold).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _common

import scorewatch as sw
from scorewatch.core.call import AgentCall
from scorewatch.live.entry import in_review_sample
from scorewatch.sinks import ScoreRecord, SqliteSink
from scorewatch.sinks.labels import (
    LABEL_TABLE,
    REVIEW_COLUMNS,
    SCORE_TABLE,
    Label,
    SqliteLabelStore,
    label_queries,
    review_row,
)
from scorewatch.sinks.sql import quote

# The scan the stored marks replaced: the newest unlabelled successful runs of the scorer.
_SCANNED = 10_000
_SCAN_SQL = (
    f"SELECT {', '.join(f's.{quote(c)}' for c in REVIEW_COLUMNS)} FROM {quote(SCORE_TABLE)} s "
    f'WHERE s."scorerId" = ? AND s."status" = \'success\' AND NOT EXISTS (SELECT 1 FROM '
    f'{quote(LABEL_TABLE)} l WHERE l."runId" = s."id" AND l."scorerId" = s."scorerId") '
    f'ORDER BY s."createdAt" DESC, s."id" DESC LIMIT ?'
)


def fill(path: Path, runs: int, rate: float) -> int:
    """The table, and labels on every other marked run; returns how many runs are marked."""
    scorer = sw.create_scorer(id="length", description="d").generate_score(lambda ctx: 0.5)
    result = scorer.run_sync(output="x" * 200)
    sink = SqliteSink(path)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    marked: list[str] = []
    batch: list[ScoreRecord] = []
    for index in range(runs):
        run_id = f"run-{index}"
        call = AgentCall(input="q" * 200, output="x" * 200, target="bot", trace_id=f"{index:032x}")
        review = in_review_sample(run_id, rate)
        record = ScoreRecord.success(run_id, scorer, call, result, review=review)
        object.__setattr__(record, "created_at", start + timedelta(seconds=index))
        batch.append(record)
        if review:
            marked.append(run_id)
        if len(batch) == 5000:
            asyncio.run(sink.write(batch))
            batch = []
    asyncio.run(sink.write(batch))
    sink.close()
    labels = [Label(run_id, "length", "ana", verdict="pass") for run_id in marked[::2]]
    asyncio.run(SqliteLabelStore(path).put(labels))
    return len(marked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scores.db"
        marked = fill(path, args.runs, args.rate)
        statements = label_queries(quote(LABEL_TABLE), quote(SCORE_TABLE), "?")
        conn = sqlite3.connect(path)

        def stored() -> int:
            rows = conn.execute(statements["review_pending"], ("length", 50)).fetchall()
            [review_row(row, json.loads) for row in rows]
            counted, labelled = conn.execute(statements["review_counts"], ("length",)).fetchone()
            return int(counted - labelled)

        def scanned() -> int:
            rows = conn.execute(_SCAN_SQL, ("length", _SCANNED)).fetchall()
            found = [review_row(row, json.loads) for row in rows]
            return sum(in_review_sample(str(run["id"]), args.rate) for run in found)

        times: dict[str, list[float]] = {"stored_marks": [], "scan_of_10000": []}
        pending: dict[str, int] = {}
        for _ in range(args.repeats):  # interleaved: the machine's noise hits both alike
            for name, work in (("stored_marks", stored), ("scan_of_10000", scanned)):
                began = time.perf_counter()
                pending[name] = work()
                times[name].append(time.perf_counter() - began)
        conn.close()
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    result: dict[str, Any] = {
        "runs": args.runs,
        "review_rate": args.rate,
        "marked": marked,
        "pending_exact": marked - len(range(0, marked, 2)),
        "pending_seen": pending,
        "median_ms": {name: round(value, 3) for name, value in medians.items()},
        "scan_over_stored": round(medians["scan_of_10000"] / medians["stored_marks"], 1),
    }
    _common.emit(result, args.output)


if __name__ == "__main__":
    main()
