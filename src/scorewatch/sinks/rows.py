"""The score-row table the SQL sinks share: its columns, their SQL, and row (de)serialization.

`SqliteSink` and `PostgresSink` store `ScoreRecord.to_row()` in the same columns (the reference
system's `mastra_scorers` table plus target, status, judge records and failure fields). What
differs between them is only the SQL dialect (placeholder, column types) and how a value crosses
the driver (JSON as text or as `jsonb`, timestamps as text or `timestamptz`): those come in as
arguments, the rest is written once here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final

from .base import DEFAULT_QUERY_LIMIT, ScoreOrder, ScoreQuery
from .storable import storable_text

__all__ = [
    "JSON_COLUMNS",
    "SCORE_COLUMNS",
    "TIME_COLUMNS",
    "Condition",
    "create_table_sql",
    "decode_row",
    "encode_row",
    "filter_conditions",
    "non_finite_path",
    "order_key",
    "quote",
    "select_sql",
    "upsert_sql",
]

SCORE_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "scorerId",
    "entityId",
    "runId",
    "input",
    "output",
    "additionalContext",
    "requestContext",
    "extractStepResult",
    "extractPrompt",
    "score",
    "analyzeStepResult",
    "analyzePrompt",
    "reason",
    "reasonPrompt",
    "scorer",
    "metadata",
    "source",
    "entity",
    "entityType",
    "structuredOutput",
    "traceId",
    "spanId",
    "resourceId",
    "threadId",
    "preprocessStepResult",
    "preprocessPrompt",
    "generateScorePrompt",
    "generateReasonPrompt",
    "createdAt",
    "updatedAt",
    "target",
    "status",
    "judge",
    "error",
    "errorCode",
    "errorType",
    "failedStep",
    "completedSteps",
)
JSON_COLUMNS: Final = frozenset(
    {
        "input",
        "output",
        "additionalContext",
        "requestContext",
        "extractStepResult",
        "analyzeStepResult",
        "scorer",
        "metadata",
        "entity",
        "preprocessStepResult",
        "judge",
        "completedSteps",
    }
)
TIME_COLUMNS: Final = frozenset({"createdAt", "updatedAt"})
_INDEXES: Final = (
    ("entity_created", ("entityId", "createdAt")),
    ("scorer_created", ("scorerId", "createdAt")),
    ("created", ("createdAt",)),
)

Condition = tuple[str, str, Any]
"""(column, comparison with `{}` where the placeholder goes, value); a None value is no filter."""


def non_finite_path(value: Any) -> list[str | int] | None:
    """Where in `value` (JSON-like data) the first NaN or infinite number is, as keys and
    indexes (`[]` for `value` itself); None when there is none. Walks without recursion, so
    any nesting depth is fine."""
    if not _has_non_finite(value):  # the common case, without building any path
        return None
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return [_key_text(part) if isinstance(part, str) else part for part in path]
        elif isinstance(item, Mapping):
            stack.extend((child, (*path, str(key))) for key, child in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((child, (*path, index)) for index, child in enumerate(item))
    return None


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if item - item != 0.0:  # inf - inf and nan - nan are nan
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _key_text(key: str) -> str:
    # A key named in an error answer: bounded, and printable whatever it held.
    return storable_text(key[:40] + ("..." if len(key) > 40 else ""))


def quote(name: str) -> str:
    """`name` as a quoted SQL identifier; anything but letters, digits and `_` is refused."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return f'"{name}"'


def create_table_sql(
    table_sql: str,
    index_prefix: str,
    types: Mapping[str, str],
    *,
    text_type: str,
    json_type: str | None = None,
) -> list[str]:
    """The table and its indexes, if missing. A column's SQL type is `types[column]`, else
    `json_type` for a JSON column (default `text_type`), else `text_type`."""

    def column_type(column: str) -> str:
        if column in types:
            return types[column]
        return (json_type or text_type) if column in JSON_COLUMNS else text_type

    columns = ", ".join(f"{quote(c)} {column_type(c)}" for c in SCORE_COLUMNS)
    statements = [f"CREATE TABLE IF NOT EXISTS {table_sql} ({columns})"]
    for suffix, keys in _INDEXES:
        index = quote(f"{index_prefix}_{suffix}_idx")
        key_sql = ", ".join(quote(k) for k in keys)
        statements.append(f"CREATE INDEX IF NOT EXISTS {index} ON {table_sql} ({key_sql})")
    return statements


def upsert_sql(table_sql: str, mark: str) -> str:
    """Insert a row (values in `SCORE_COLUMNS` order), or replace all of the stored row with
    the same id but its `createdAt`: a run delivered twice leaves one row."""
    names = ", ".join(quote(c) for c in SCORE_COLUMNS)
    marks = ", ".join(mark for _ in SCORE_COLUMNS)
    updates = ", ".join(
        f"{quote(c)} = excluded.{quote(c)}" for c in SCORE_COLUMNS if c not in ("id", "createdAt")
    )
    return (
        f"INSERT INTO {table_sql} ({names}) VALUES ({marks}) "
        f"ON CONFLICT ({quote('id')}) DO UPDATE SET {updates}"
    )


def filter_conditions(
    query: ScoreQuery, since: Any, accepted: AbstractSet[str] = ScoreQuery.__optional_keys__
) -> list[Condition]:
    """The conditions of a `ScoreQuery`; `since` is its lower bound as the driver takes it. A
    filter the sink does not know is refused (a misspelt filter must not read every row)."""
    unknown = sorted(set(query) - accepted)
    if unknown:
        raise TypeError(f"unexpected query filter(s): {', '.join(unknown)}")
    order = query.get("order") or "newest"
    if order not in _ORDERS:
        raise ValueError(f"unknown order {order!r}; expected one of {', '.join(_ORDERS)}")
    ordered_by_score = order != "newest"
    return [
        ("entityId", "= {}", query.get("target")),
        ("scorerId", "= {}", query.get("scorer")),
        ("createdAt", ">= {}", since),
        ("status", "= {}", query.get("status")),
        ("score", ">= {}", query.get("min_score")),
        ("score", "<= {}", query.get("max_score")),
        # Ordered by score, only rows that have one (a failed run has none).
        ("score", "IS NOT NULL", True if ordered_by_score else None),
    ]


# order -> (sort column, descending)
_ORDERS: Final[dict[ScoreOrder, tuple[str, bool]]] = {
    "newest": ("createdAt", True),
    "score_asc": ("score", False),
    "score_desc": ("score", True),
}


def order_key(row: Mapping[str, Any], order: ScoreOrder | None) -> tuple[Any, str]:
    """Where `row` sits in `order`: (sort value, id), what `after` takes to continue past it."""
    column, _descending = _ORDERS[order or "newest"]
    return row[column], str(row["id"])


def select_sql(
    table_sql: str,
    mark: str,
    conditions: Iterable[Condition],
    limit: int | None,
    order: ScoreOrder | None = None,
    after: tuple[Any, str] | None = None,
) -> tuple[str, list[Any]]:
    """Every score column of the rows that meet all `conditions`, in `order` (default newest
    first; ties by id), strictly after the key `after` (from `order_key`), at most `limit`
    (None: `DEFAULT_QUERY_LIMIT`); returns the statement and its parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    for column, comparison, value in conditions:
        if value is None:
            continue
        if "{}" in comparison:
            clauses.append(f"{quote(column)} {comparison.format(mark)}")
            params.append(value)
        else:
            clauses.append(f"{quote(column)} {comparison}")
    column, descending = _ORDERS[order or "newest"]
    direction = "DESC" if descending else "ASC"
    if after is not None:
        # Keyset pagination: a row value comparison, so pages neither skip nor repeat rows.
        clauses.append(
            f"({quote(column)}, {quote('id')}) {'<' if descending else '>'} ({mark}, {mark})"
        )
        params.extend(after)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    names = ", ".join(quote(c) for c in SCORE_COLUMNS)
    sql = (
        f"SELECT {names} FROM {table_sql}{where} "
        f"ORDER BY {quote(column)} {direction}, {quote('id')} {direction} LIMIT {mark}"
    )
    params.append(max(0, int(DEFAULT_QUERY_LIMIT if limit is None else limit)))
    return sql, params


def encode_row(
    row: Mapping[str, Any],
    *,
    dumps: Callable[[Any], str],
    as_json: Callable[[Any], Any] | None = None,
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
) -> tuple[Any, ...]:
    """`row` (a `ScoreRecord.to_row()`) as values in `SCORE_COLUMNS` order. None stays None; a
    JSON column's value becomes `as_json(value)` (default: the text `dumps(value)`); a reason
    that is not text becomes `dumps(reason)`; `convert` adapts any other column."""
    to_json = dumps if as_json is None else as_json
    special = convert or {}
    values: list[Any] = []
    for column in SCORE_COLUMNS:
        value = row.get(column)
        if value is None:
            pass
        elif column in JSON_COLUMNS:
            value = to_json(value)
        elif column in special:
            value = special[column](value)
        elif column == "reason" and not isinstance(value, str):
            value = dumps(value)
        values.append(value)
    return tuple(values)


def decode_row(
    columns: Sequence[str], values: Sequence[Any], convert: Mapping[str, Callable[[Any], Any]]
) -> dict[str, Any]:
    """A stored row back as `to_row()` had it: `convert` maps a column to the function that
    undoes its encoding (applied to values that are not None)."""
    decoded: dict[str, Any] = {}
    for column, value in zip(columns, values, strict=True):
        if value is not None and column in convert:
            decoded[column] = convert[column](value)
        else:
            decoded[column] = value
    return decoded
