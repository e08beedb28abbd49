"""`scorewatch erase`: delete a person's stored score rows, say which, and leave an audit line.

    scorewatch erase --store scores.db --trace-id 0af7651916cd43dd8448eb211c80319c
    scorewatch erase --store postgresql://db/scores --target support-bot --until 2026-01-01
    scorewatch erase --store scores.jsonl --run-id call-42 --dry-run

The store is a SQLite file, a PostgreSQL DSN (`postgresql://...`, `--schema` names the schema)
or a JSONL file (rewritten without the rows: stop the process appending to it first). Every
given condition must hold. What was deleted is printed by id, scorer, target, trace and time,
never content; the audit line (stderr, and appended to `--audit-log`) says who asked for what
and how many rows went, with the DSN's password left out.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._stores import add_store_arguments, shown_store, store_kind

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_arguments(parser, jsonl=True, what="rows")
    parser.add_argument("--trace-id", help="rows of this evaluated trace (hex)")
    parser.add_argument("--run-id", help="rows of this scorer run or agent run id")
    parser.add_argument("--dry-run", action="store_true", help="list the rows, delete none")
    parser.add_argument("--audit-log", metavar="FILE", help="also append the audit line here")
    parser.add_argument("--format", choices=("table", "json"), default="table")


def _erase(args: argparse.Namespace, erasure: Any) -> tuple[str, list[dict[str, Any]]]:
    from ..sinks.erase import erase_jsonl, erase_postgres, erase_sqlite

    kind, where = store_kind(args.store)
    if kind == "postgresql":
        return kind, erase_postgres(where, erasure, schema=args.schema, dry_run=args.dry_run)
    if kind == "jsonl":
        return kind, erase_jsonl(where, erasure, dry_run=args.dry_run)
    return kind, erase_sqlite(where, erasure, dry_run=args.dry_run)


def run(args: argparse.Namespace) -> int:
    from ..sinks.erase import Erasure

    try:
        erasure = Erasure(
            target=args.target,
            trace_id=args.trace_id,
            run_id=args.run_id,
            since=args.since,
            until=args.until,
        )
        kind, rows = _erase(args, erasure)
    except ValueError as error:
        print(f"scorewatch erase: {error}", file=sys.stderr)
        return 2
    audit = {
        "event": "scorewatch.erase",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "by": getpass.getuser(),
        "store": shown_store(args.store),
        "kind": kind,
        "conditions": erasure.describe(),
        "dry_run": args.dry_run,
        "rows": len(rows),
    }
    if args.format == "json":
        print(json.dumps({"deleted" if not args.dry_run else "would_delete": rows}, indent=2))
    else:
        verb = "would delete" if args.dry_run else "deleted"
        print(f"{verb} {len(rows)} row(s) from {audit['store']}")
        for row in rows:
            print(
                f"  {row['createdAt']}  {row['id']}  scorer={row['scorerId']}  "
                f"target={row['entityId']}  trace={row['traceId']}"
            )
    line = json.dumps(audit, sort_keys=True)
    print(f"scorewatch erase: audit {line}", file=sys.stderr)
    if args.audit_log:
        with Path(args.audit_log).open("a", encoding="utf-8") as log:
            log.write(line + "\n")
    return 0
