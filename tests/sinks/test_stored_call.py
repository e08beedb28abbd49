"""`call_of_row`: a stored score row read back as the call it scored, the one place rescoring
builds its calls (sinks/stored_call.py). Every call field a row keeps comes back as it went in,
through the row itself and through a real SQLite store; redaction markers are recognised."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from live_support import constant_scorer
from scorewatch.core.call import AgentCall
from scorewatch.privacy import PrivacyPolicy, holds_markers
from scorewatch.sinks import SqliteSink
from scorewatch.sinks.record import ScoreRecord
from scorewatch.sinks.storable import is_secret_key
from scorewatch.sinks.stored_call import ROW_METADATA_KEYS, call_of_row, row_is_redacted

pytestmark = pytest.mark.unit

_SCORER = constant_scorer()
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=20)
# Keys that look secret are stored `[redacted]` (`is_secret_key`), so they never come back.
_keys = _text.filter(lambda key: not is_secret_key(key))
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
_names = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12)
_metadata = st.dictionaries(
    _names.filter(lambda key: key not in ROW_METADATA_KEYS and not is_secret_key(key)),
    _json,
    max_size=3,
)
_calls = st.builds(
    AgentCall,
    input=_json,
    output=_json,
    target=st.none() | _names,
    trace_id=st.none() | st.text("0123456789abcdef", min_size=32, max_size=32),
    span_id=st.none() | st.text("0123456789abcdef", min_size=16, max_size=16),
    run_id=st.none() | _names,
    request_context=st.none()
    | st.dictionaries(_names.filter(lambda k: not is_secret_key(k)), _json),
    ground_truth=_json,
    metadata=st.none() | _metadata.filter(bool),
    score_source=st.sampled_from(["live", "trace"]),
    conversation_id=st.none() | _names,
)


def _row(call: AgentCall, source: Any = "LIVE", **record: Any) -> dict[str, Any]:
    return ScoreRecord.failure("run-1", _SCORER, call, RuntimeError("x"), source, **record).to_row()


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(_calls)
def test_a_row_gives_back_the_call_it_was_made_of(call: AgentCall) -> None:
    assert call_of_row(_row(call)) == call


def test_through_a_sqlite_store_and_from_an_experiment(tmp_path: Path) -> None:
    call = AgentCall(
        input=[{"role": "user", "content": "hi"}],
        output={"answer": "hello", "n": 2},
        target="support-bot",
        run_id="r1",
        request_context={"tenant": "acme"},
        ground_truth="hello",
        metadata={"channel": "web"},
        score_source="experiment",
    )
    sink = SqliteSink(tmp_path / "scores.db")
    record = ScoreRecord.failure("run-1", _SCORER, call, RuntimeError("x"), "TEST")
    asyncio.run(sink.write([record]))
    asyncio.run(sink.aclose())
    (row,) = SqliteSink(tmp_path / "scores.db").query()
    assert call_of_row(row) == call


def test_redacted_rows_are_recognised() -> None:
    policy = PrivacyPolicy(redact=["email"])
    call = AgentCall(input="write to ada@example.com", output="done")
    row = _row(call, redaction=policy.start())
    assert row["input"] == "write to <EMAIL_1>"
    assert row_is_redacted(row) and not row_is_redacted(_row(call))
    assert call_of_row(row).input == "write to <EMAIL_1>"  # what the store kept, no more
    assert holds_markers({"a": ["<PHONE_12>"]}) and not holds_markers("a <b> and <EMAIL_>")
