"""Reading evaluation datasets from JSONL or CSV files, with errors that name line and field."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ..errors import ScorewatchError

__all__ = ["DATASET_INVALID", "load_dataset"]

DATASET_INVALID = "SCOREWATCH_DATASET_INVALID"
KNOWN_COLUMNS = (
    "input",
    "inputs",
    "output",
    "ground_truth",
    "expected_trajectory",
    "source",
    "context",
    "request_context",
)
# Columns that hold JSON in a CSV cell (a JSONL line holds them as JSON already).
_JSON_COLUMNS = ("inputs", "expected_trajectory", "expectedTrajectory")


def _fail(path: Path, problem: str, line: int | None = None) -> ScorewatchError:
    where = f"{path}:{line}" if line is not None else str(path)
    return ScorewatchError(
        f"{where}: {problem}", code=DATASET_INVALID, details={"path": str(path), "line": line}
    )


def _row_to_item(path: Path, line: int, row: dict[str, Any], need_output: bool) -> dict[str, Any]:
    if need_output and "output" not in row:
        raise _fail(path, "missing field 'output' (or pass --target to produce outputs)", line)
    if not need_output and "input" not in row and "inputs" not in row:
        raise _fail(path, "missing field 'input' or 'inputs' (the target needs an input)", line)
    inputs = row.get("inputs")
    if "inputs" in row and (not isinstance(inputs, list) or not inputs):
        raise _fail(path, "field 'inputs' must be a non-empty list of turns", line)
    context: dict[str, Any] = {}
    raw_context = row.get("request_context")
    if raw_context is not None:
        if not isinstance(raw_context, dict):
            raise _fail(path, "field 'request_context' must be an object", line)
        context.update(raw_context)
    for key in ("source", "context"):
        if row.get(key) not in (None, ""):
            context[key] = row[key]
    # A conversation's turns are its input (the scorers see the first turn as the input).
    item: dict[str, Any] = (
        {"inputs": inputs} if inputs is not None else {"input": row.get("input", row.get("source"))}
    )
    if "output" in row:
        item["output"] = row["output"]
    if row.get("ground_truth") not in (None, ""):
        item["ground_truth"] = row["ground_truth"]
    expected = row.get("expected_trajectory", row.get("expectedTrajectory"))
    if expected not in (None, ""):
        item["expected_trajectory"] = expected
    if context:
        item["request_context"] = context
    return item


def load_dataset(path: str | Path, *, need_output: bool = True) -> list[dict[str, Any]]:
    """Items for `run_evals`/`run_experiment` from a `.jsonl` or `.csv` file.

    Columns: `input` (or `inputs`, the turns of a conversation), `output` (unless a target
    produces it), optional `ground_truth`, `expected_trajectory` (or `expectedTrajectory`, for
    trajectory scorers), `source`, `context` (both passed to scorers through `request_context`
    too). In CSV, `context` may be a JSON list and `inputs` and `expected_trajectory` are JSON.
    """
    file = Path(path)
    if not file.is_file():
        raise _fail(file, "no such file")
    suffix = file.suffix.lower()
    items: list[dict[str, Any]] = []
    with file.open(encoding="utf-8", newline="") as handle:
        if suffix in (".jsonl", ".ndjson", ".json"):
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise _fail(file, f"not valid JSON ({exc.msg})", line_number) from None
                if not isinstance(row, dict):
                    raise _fail(file, "each line must be a JSON object", line_number)
                items.append(_row_to_item(file, line_number, row, need_output))
        elif suffix == ".csv":
            reader = csv.DictReader(handle)
            if not reader.fieldnames:
                raise _fail(file, "the CSV file has no header row")
            for row in reader:
                parsed: dict[str, Any] = {k: v for k, v in row.items() if k is not None}
                for column in _JSON_COLUMNS:
                    cell = parsed.get(column)
                    if isinstance(cell, str) and cell.strip():
                        try:
                            parsed[column] = json.loads(cell)
                        except json.JSONDecodeError:
                            problem = f"field {column!r} is not JSON"
                            raise _fail(file, problem, reader.line_num) from None
                    elif cell == "":
                        del parsed[column]
                context = parsed.get("context")
                if isinstance(context, str) and context.startswith("["):
                    try:
                        parsed["context"] = json.loads(context)
                    except json.JSONDecodeError:
                        problem = "field 'context' is not a JSON list"
                        raise _fail(file, problem, reader.line_num) from None
                items.append(_row_to_item(file, reader.line_num, parsed, need_output))
        else:
            raise _fail(file, f"unknown dataset format {suffix!r}; use .jsonl or .csv")
    if not items:
        raise _fail(file, "the dataset has no rows")
    return items
