"""`[traces]`: the OTLP/HTTP trace intake of `scorewatch serve` (`POST /v1/traces`).

Which spans become runs is `[[traces.select]]` (the `SpanSelector` shape; none: agent and
model-call spans in every convention read); which scorers score them is `scorers` (ids of
`[[scorers]]` entries, so their sampling and filters apply unchanged; none: all of them); how
spans are put back together is `[traces.buffer]` (`BufferLimits`); which scorers score whole
conversations, when a conversation closes and its bounds is `[traces.sessions]`
(`SessionScoring`: `SessionLimits` and the scorers).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...traces.assembly import BufferLimits
from ...traces.select import SpanSelector
from ...traces.sessions import SessionLimits

__all__ = ["TRACES_PATH", "SessionScoring", "TracesSettings"]

TRACES_PATH = "/v1/traces"


class SessionScoring(SessionLimits):
    """`[traces.sessions]`: the conversations' scorers, with when a session closes and its
    bounds. The scorers score sessions only: without `[traces] scorers`, the runs of single
    spans are scored by every other scorer."""

    scorers: list[str] = Field(
        min_length=1, description="Ids of [[scorers]] that score whole conversations."
    )


class TracesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    listen: str | None = Field(
        None,
        description="HOST:PORT of a second listener serving only POST /v1/traces (e.g. "
        "127.0.0.1:4318, where a Collector's otlphttp exporter points); none: the main one only.",
    )
    select: list[SpanSelector] = Field(
        default_factory=list, description="Which spans are runs; none: the default selectors."
    )
    scorers: list[str] | None = Field(
        None, min_length=1, description="Ids of [[scorers]] that score traces; none: all."
    )
    buffer: BufferLimits = Field(default_factory=BufferLimits)
    sessions: SessionScoring | None = Field(
        None, description="Conversations scored as sessions across traces; none: off."
    )
    max_decoded_bytes: int = Field(
        32 << 20,
        ge=1024,
        le=1 << 30,
        description="Largest export request once gzip is undone (the sent body is bounded by "
        "server.max_body_bytes).",
    )
    assembly_interval: float = Field(
        0.5, gt=0, le=60, description="Seconds between two looks for complete spans."
    )

    @field_validator("listen")
    @classmethod
    def _check_listen(cls, value: str | None) -> str | None:
        if value is not None:
            from .file import parse_listen

            parse_listen(value)
        return value

    @property
    def host(self) -> str | None:
        from .file import parse_listen

        return None if self.listen is None else parse_listen(self.listen)[0]

    @property
    def port(self) -> int | None:
        from .file import parse_listen

        return None if self.listen is None else parse_listen(self.listen)[1]
