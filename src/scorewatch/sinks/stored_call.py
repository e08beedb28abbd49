"""The agent call a stored score row was made from: `ScoreRecord.to_row()` read backwards.

This is the one place that knows which columns of a row hold the call (`scorewatch rescore`
builds every call it judges again here):

- `input`, `output` and `requestContext` are the call's own columns;
- `metadata.groundTruth` is the ground truth, `metadata.agentRunId` the agent's run id, and the
  rest of `metadata` is the call's own metadata, but for the keys the row adds itself
  (`structuredOutput`, `scoreSource`, `notScorable`, and `ROW_METADATA_KEYS` generally);
- `target`, `traceId` and `spanId` say who answered and where (`entityId` is made of them),
  `threadId` which conversation the call belongs to;
- where it came from: `metadata.scoreSource` says `trace` for a call read from spans, the row's
  `source` `TEST` an experiment's item; anything else was live traffic.

What the row does not keep cannot come back: the scorer-level context (a faithfulness scorer's
`context` is the scorer's option, not the call's), a multi-turn item's later turns, an expected
trajectory. What it keeps redacted comes back redacted: a row written under a privacy policy has
`<EMAIL_1>`-style markers where the personal data was, and secret-looking keys of the request
context and metadata read `[redacted]` (`storable`); `holds_markers` tells the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..core.call import AgentCall, ScoreSource
from ..privacy import holds_markers

__all__ = ["ROW_METADATA_KEYS", "call_of_row", "row_is_redacted"]

ROW_METADATA_KEYS: Final = frozenset(
    {"structuredOutput", "agentRunId", "groundTruth", "scoreSource", "notScorable", "rescoredFrom"}
)
"""Keys of a row's `metadata` the row itself adds (`ScoreRecord.to_row`, `rescore`), never the
call's: left out of the call's metadata when it is read back."""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _source(row: Mapping[str, Any], metadata: Mapping[str, Any]) -> ScoreSource:
    if metadata.get("scoreSource") == "trace":
        return "trace"
    return "experiment" if row.get("source") == "TEST" else "live"


def call_of_row(row: Mapping[str, Any]) -> AgentCall:
    """The call `row` (a stored score row, as a sink's `query` returns it) was scored on."""
    found = row.get("metadata")
    metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    own = {key: value for key, value in metadata.items() if key not in ROW_METADATA_KEYS}
    return AgentCall(
        input=row.get("input"),
        output=row.get("output"),
        target=_text(row.get("target")),
        trace_id=_text(row.get("traceId")),
        span_id=_text(row.get("spanId")),
        run_id=_text(metadata.get("agentRunId")),
        request_context=row.get("requestContext"),
        ground_truth=metadata.get("groundTruth"),
        metadata=own or None,
        score_source=_source(row, metadata),
        conversation_id=_text(row.get("threadId")),
    )


def row_is_redacted(row: Mapping[str, Any]) -> bool:
    """Whether the call's content in `row` (input, output, request context, ground truth) holds
    redaction markers: it was stored under a privacy policy, and a scorer reading it again reads
    the markers, not what the agent saw."""
    found = row.get("metadata")
    truth = found.get("groundTruth") if isinstance(found, Mapping) else None
    return holds_markers([row.get("input"), row.get("output"), row.get("requestContext"), truth])
