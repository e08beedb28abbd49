"""The state file of a batch-priced run: which batches it submitted, for which requests.

A run killed while its batches are in the provider's hands must not pay for them twice. Before a
batch is created, its uploaded input file and the `custom_id` of every request in it are written
here; once created, its batch id. A restarted run reads the file and, for a request whose
`custom_id` is listed, waits for (or downloads again) that batch's answer instead of submitting
the request again. A batch whose creation was cut short (file id written, batch id not) is
looked up on the server by its input file before anything is resubmitted.

The file is JSON, replaced atomically (written beside, then renamed), so a kill mid-write leaves
the previous version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ScorewatchError

__all__ = ["BATCH_STATE_INVALID", "BatchRecord", "BatchState"]

BATCH_STATE_INVALID = "SCOREWATCH_BATCH_STATE_INVALID"


class BatchRecord(BaseModel):
    """One submitted batch: the round that sent it, its input file, its id once created."""

    model_config = ConfigDict(extra="forbid")

    round: int = Field(ge=1)
    input_file_id: str
    custom_ids: list[str]
    batch_id: str | None = None
    model: str = ""


class BatchState(BaseModel):
    """Every batch a run (and the runs it resumed) submitted, in submission order."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    batches: list[BatchRecord] = Field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> BatchState:
        """The state at `path`; an empty state when there is no file."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls()
        try:
            return cls.model_validate_json(text)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the file"
            raise ScorewatchError(
                f"batch state file {path}: {where}: {first['msg']} (delete it to start over; "
                "batches it lists would then be submitted again)",
                code=BATCH_STATE_INVALID,
            ) from None

    def dumps(self) -> str:
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"))

    @staticmethod
    def write(path: Path, text: str) -> None:
        """Replace the file at `path` with `text` atomically (and durably: it is fsynced)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        with partial.open("w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
