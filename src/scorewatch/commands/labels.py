"""`scorewatch labels import FILE`: human labels from a JSONL or CSV file into the stores.

    scorewatch labels import labels.jsonl --config scorewatch.toml

Each line (JSONL) or row (CSV, a header naming the fields) is a label as `POST /v1/labels`
takes it: `scorer`, `run_id` (or `target`, `trace_id`, `span_id`), `annotator`, `score` or
`verdict` (`pass`/`fail`, or one of the scorer's categories), and optionally `comment` and
`created_at`. The labels are checked as the service checks them, then stored all together,
or, when any is refused, none (exit 1, each problem named by its line). Importing the same
file again changes nothing: one label per run, scorer and annotator.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

from ..errors import ScorewatchError
from ._service_config import load_service_config

__all__ = ["add_arguments", "run"]

_CSV_NUMBERS = ("score",)
_INDEX = re.compile(r"^labels\[(\d+)\]")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    importing = actions.add_parser("import", help="store the labels of a JSONL or CSV file")
    importing.add_argument("file", help="labels, one per line (JSONL) or row (CSV)")
    importing.add_argument(
        "--config",
        "-c",
        default="scorewatch.toml",
        help="the service's TOML configuration: its scorers and stores "
        "(default: ./scorewatch.toml)",
    )
    importing.set_defaults(queue=None)


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_import(Path(args.file), args))


def _rows(path: Path) -> list[tuple[int, Any]]:
    """(line number, raw label) of each label in the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScorewatchError(f"cannot read {path}: {error}", code="SCOREWATCH_CLI_USAGE") from None
    if path.suffix.lower() == ".csv":
        rows: list[tuple[int, Any]] = []
        reader = csv.DictReader(io.StringIO(text))
        for row in reader:
            label: dict[str, Any] = {k: v for k, v in row.items() if k and v not in (None, "")}
            for name in _CSV_NUMBERS:
                if name in label:
                    # A number that does not parse stays text: refused below, field named.
                    with contextlib.suppress(ValueError):
                        label[name] = float(label[name])
            rows.append((reader.line_num, label))
        return rows
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except ValueError as error:
            raise ScorewatchError(
                f"{path}:{number}: not JSON ({error})", code="SCOREWATCH_CLI_USAGE"
            ) from None
    return rows


def _report(path: Path, lines: list[int], problems: list[dict[str, str]]) -> None:
    for problem in problems:
        found = _INDEX.match(problem["field"])
        where = f"{path}:{lines[int(found.group(1))]}" if found else str(path)
        field = _INDEX.sub("", problem["field"]).lstrip(".") or "label"
        print(f"{where}: {field}: {problem['message']}", file=sys.stderr)


async def _import(path: Path, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ..server.config.label_stores import build_label_stores
    from ..server.config.scorer_entries import build_scorers
    from ..server.http.errors import field_path
    from ..server.http.label_intake import LabelsRefused, check_labels
    from ..server.http.label_models import LabelRequest

    rows = _rows(path)
    if not rows:
        raise ScorewatchError(f"{path}: no labels", code="SCOREWATCH_CLI_USAGE")
    lines = [number for number, _raw in rows]
    requests: list[LabelRequest] = []
    problems: list[dict[str, str]] = []
    for index, (_number, raw) in enumerate(rows):
        try:
            requests.append(LabelRequest.model_validate(raw))
        except ValidationError as error:
            for item in error.errors():
                where = field_path(["labels", index, *item.get("loc", ())])
                problems.append({"field": where, "message": str(item.get("msg"))})
    if problems:
        _report(path, lines, problems)
        return 1
    config = load_service_config(args)
    built = build_scorers(config)
    scales = {c.id: float(c.scorer.scale) for c in built}
    categories = {c.id: c.scorer.categories for c in built}
    stores = build_label_stores(config)
    if stores.reader is None:
        raise ScorewatchError(
            "no store to keep labels in: enable [sinks] sqlite or postgres",
            code="SCOREWATCH_CLI_USAGE",
        )
    try:
        labels, _runs = await check_labels(requests, scales, stores.reader, categories=categories)
    except LabelsRefused as refused:
        _report(path, lines, refused.problems)
        return 1
    for store in stores.writers:
        await store.put(labels)
    print(f"stored {len(labels)} labels from {path}")
    return 0
