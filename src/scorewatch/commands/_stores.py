"""What the commands that work on a score store share (`erase`, `rescore`): reading `--store`
(a SQLite file, a PostgreSQL DSN, a JSONL file), showing it without its password, and the
`--since`/`--until` times."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from ..errors import ScorewatchError
from ._eval_scorers import CLI_USAGE

__all__ = ["StoreKind", "add_store_arguments", "moment", "shown_store", "store_kind"]

StoreKind = Literal["postgresql", "sqlite", "jsonl"]


def moment(text: str) -> datetime:
    """An ISO 8601 time from the command line; without a zone, UTC."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time, got {text!r}") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def add_store_arguments(parser: argparse.ArgumentParser, *, jsonl: bool, what: str) -> None:
    """`--store` (a JSONL file too when `jsonl`), `--schema`, and the selection both commands
    share, `--target`, `--since` and `--until`, each of `what` (rows, runs)."""
    kinds = "a SQLite file, a PostgreSQL DSN (postgresql://... or host=... dbname=...)"
    parser.add_argument(
        "--store",
        required=True,
        metavar="DSN",
        help=kinds + (", or a .jsonl file" if jsonl else ""),
    )
    parser.add_argument("--schema", default="public", help="PostgreSQL schema (default public)")
    parser.add_argument("--target", help=f"{what} of this target (the agent: the rows' entityId)")
    parser.add_argument(
        "--since", type=moment, help=f"{what} created at or after (ISO 8601; no zone: UTC)"
    )
    parser.add_argument("--until", type=moment, help=f"{what} created before (ISO 8601)")


def shown_store(store: str) -> str:
    """The store as output names it: a DSN without its password."""
    parts = urlsplit(store)
    if parts.scheme and parts.password:
        host = parts.hostname or ""
        netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return store


def store_kind(store: str) -> tuple[StoreKind, str]:
    """What `--store` names and where: a PostgreSQL DSN as given, else an existing file's path
    (`sqlite:///` dropped), a JSONL file by its `.jsonl`/`.ndjson` name."""
    if store.startswith(("postgresql://", "postgres://")) or "dbname=" in store:
        return "postgresql", store
    path = store.removeprefix("sqlite:///") if store.startswith("sqlite:///") else store
    if not Path(path).is_file():
        raise ScorewatchError(f"--store: no file at {path}", code=CLI_USAGE)
    return ("jsonl" if path.endswith((".jsonl", ".ndjson")) else "sqlite"), path
