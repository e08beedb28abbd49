"""Where human labels go: the stores of `[sinks]`, each in a table of its own.

Labels follow the scores: into the SQLite database (`scorewatch_labels` beside
`mastra_scorers`), into PostgreSQL when configured (migration 3), and appended to a JSONL file
next to the scores' one (`<name>.labels.jsonl`). The store that `GET /v1/scores` reads is the
one that finds the runs labels name and reads labels back for agreement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...sinks.labels import JsonlLabelStore, LabelStore, RunResolver, SqliteLabelStore
from .file import ServeConfig

__all__ = ["LabelStores", "build_label_stores", "labels_jsonl_path"]


@dataclass(frozen=True, slots=True)
class LabelStores:
    """Every store a label is written to, and the one that reads them (None: labels are off)."""

    writers: Sequence[LabelStore]
    reader: RunResolver | None


def labels_jsonl_path(scores_path: Path) -> Path:
    """`scores.jsonl` -> `scores.labels.jsonl`."""
    return scores_path.with_name(f"{scores_path.stem}.labels{scores_path.suffix or '.jsonl'}")


def build_label_stores(config: ServeConfig) -> LabelStores:
    writers: list[LabelStore] = []
    reader: RunResolver | None = None
    settings = config.sinks
    dsn = settings.postgres_dsn()
    if dsn is not None:
        from ...sinks.postgres_labels import PostgresLabelStore

        postgres = PostgresLabelStore(dsn, schema=settings.postgres_schema)
        writers.append(postgres)
        reader = postgres
    elif settings.sqlite is not False:
        sqlite = SqliteLabelStore(config.resolve_path(settings.sqlite))
        writers.append(sqlite)
        reader = sqlite
    if settings.jsonl is not None:
        writers.append(JsonlLabelStore(labels_jsonl_path(config.resolve_path(settings.jsonl))))
    return LabelStores(writers, reader)
