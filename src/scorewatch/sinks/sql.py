"""The SQL the SQL sinks share: the score table, its indexes, upsert, filters and queries.

`SqliteSink` and `PostgresSink` store `ScoreRecord.to_row()` in the same columns
(`SCORE_COLUMNS`, declared with the row in `record.py`: the reference system's `mastra_scorers`
table plus target, status, judge records and failure fields). What differs between them is only
the SQL dialect (placeholder, column types); that comes in as arguments, the statements are
written once here. How a row's values cross a driver (`encode_row`, `decode_row`) is the
record's too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final

from .base import DEFAULT_QUERY_LIMIT, ScoreOrder, ScoreQuery
from .record import JSON_COLUMNS, SCORE_COLUMNS

__all__ = [
    "Condition",
    "add_columns_sql",
    "create_table_sql",
    "filter_conditions",
    "order_key",
    "quote",
    "review_index_sql",
    "select_sql",
    "upsert_sql",
]

_INDEXES: Final = (
    ("entity_created", ("entityId", "createdAt")),
    ("scorer_created", ("scorerId", "createdAt")),
    ("created", ("createdAt",)),
)

Condition = tuple[str, str, Any]
"""(column, comparison with `{}` where the placeholder goes, value); a None value is no filter."""


def quote(name: str) -> str:
    """`name` as a quoted SQL identifier; anything but letters, digits and `_` is refused."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return f'"{name}"'


def _column_type(
    column: str, types: Mapping[str, str], text_type: str, json_type: str | None
) -> str:
    """`types[column]`, else `json_type` for a JSON column (default `text_type`), else
    `text_type`."""
    if column in types:
        return types[column]
    return (json_type or text_type) if column in JSON_COLUMNS else text_type


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
    columns = ", ".join(
        f"{quote(c)} {_column_type(c, types, text_type, json_type)}" for c in SCORE_COLUMNS
    )
    statements = [f"CREATE TABLE IF NOT EXISTS {table_sql} ({columns})"]
    for suffix, keys in _INDEXES:
        index = quote(f"{index_prefix}_{suffix}_idx")
        key_sql = ", ".join(quote(k) for k in keys)
        statements.append(f"CREATE INDEX IF NOT EXISTS {index} ON {table_sql} ({key_sql})")
    return statements


def review_index_sql(table_sql: str, index_prefix: str) -> str:
    """The partial index of the runs marked for review (`reviewSampled`), by scorer, newest
    last: `GET /v1/review` and the review counts read only these rows, however many runs were
    not marked. Run it once the column exists."""
    index = quote(f"{index_prefix}_review_idx")
    return (
        f"CREATE INDEX IF NOT EXISTS {index} ON {table_sql} "
        f'("scorerId", "createdAt", "id") WHERE "reviewSampled"'
    )


def add_columns_sql(
    table_sql: str,
    present: AbstractSet[str],
    types: Mapping[str, str],
    *,
    text_type: str,
    json_type: str | None = None,
) -> list[str]:
    """`ALTER TABLE ... ADD COLUMN` for each of `SCORE_COLUMNS` a table made by an earlier
    scorewatch lacks (`present` holds its columns); its older rows read None there."""
    return [
        f"ALTER TABLE {table_sql} ADD COLUMN {quote(column)} "
        f"{_column_type(column, types, text_type, json_type)}"
        for column in SCORE_COLUMNS
        if column not in present
    ]


def upsert_sql(table_sql: str, mark: str, bound: Sequence[bool] | None = None) -> str:
    """Insert a row (values in `SCORE_COLUMNS` order), or replace all of the stored row with
    the same id but its `createdAt`: a run delivered twice leaves one row. With `bound` (a
    flag per column), only the flagged columns take a parameter and the others are written
    `NULL`: the same statement for rows whose other values are None."""
    names = ", ".join(quote(c) for c in SCORE_COLUMNS)
    flags = [True] * len(SCORE_COLUMNS) if bound is None else bound
    if len(flags) != len(SCORE_COLUMNS):
        raise ValueError(f"bound has {len(flags)} flags for {len(SCORE_COLUMNS)} columns")
    marks = ", ".join(mark if flag else "NULL" for flag in flags)
    updates = ", ".join(
        f"{quote(c)} = excluded.{quote(c)}" for c in SCORE_COLUMNS if c not in ("id", "createdAt")
    )
    return (
        f"INSERT INTO {table_sql} ({names}) VALUES ({marks}) "
        f"ON CONFLICT ({quote('id')}) DO UPDATE SET {updates}"
    )


def filter_conditions(
    query: ScoreQuery,
    since: Any,
    accepted: AbstractSet[str] = ScoreQuery.__optional_keys__,
    *,
    until: Any = None,
) -> list[Condition]:
    """The conditions of a `ScoreQuery`; `since` and `until` are its bounds as the driver takes
    them. A filter the sink does not know is refused (a misspelt filter must not read every
    row)."""
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
        ("createdAt", "< {}", until),
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
