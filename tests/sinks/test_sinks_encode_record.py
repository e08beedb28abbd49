"""`encode_record`, the SQLite writer's one-pass encoding: for any record, hostile values
included (NUL, unpaired surrogates, NaN and infinities, secret-looking keys, a redactor), the
same column values as `encode_row(record.to_row())`, the walk-first encoding it replaces;
`storable_json` is `stored_json(storable(value))` for any plain JSON value."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorewatch.core.call import AgentCall
from scorewatch.core.result import ScorerRunResult
from scorewatch.privacy import PrivacyPolicy
from scorewatch.sinks.record import ScoreRecord, encode_record, encode_row
from scorewatch.sinks.sqlite import _ENCODE
from scorewatch.sinks.storable import storable, storable_json, stored_json

pytestmark = pytest.mark.unit

_POLICY = PrivacyPolicy(redact=["email"])

# Text with what the walk changes or the check looks for: NUL, unpaired surrogates, the words
# NaN and Infinity, an escaped NUL written out, and personal data for the redactor.
_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=12),
    st.sampled_from(
        ["\x00", "\ud800", "a\udfffb", "NaN", "-Infinity", "\\u0000", "mail jo@example.com",
         "https://user:pw@host/x?api_key=k", "plain"]
    ),
)  # fmt: skip
_numbers = st.integers(-(2**70), 2**70) | st.floats() | st.booleans() | st.none()
_json = st.recursive(
    _numbers | _text,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_text | st.sampled_from(["apiKey", "token", "id"]), inner, max_size=3)
    ),
    max_leaves=12,
)


def _record(draw: st.DrawFn) -> ScoreRecord:
    run_id = draw(_text)
    call = AgentCall(
        input=draw(_json),
        output=draw(_json),
        target=draw(st.none() | _text),
        trace_id=draw(st.none() | _text),
        run_id=draw(st.none() | _text),
        request_context=draw(st.none() | _json),
        ground_truth=draw(st.none() | _json),
        metadata=draw(st.none() | st.dictionaries(_text, _json, max_size=3)),
        conversation_id=draw(st.none() | _text),
    )
    result = ScorerRunResult(
        run_id=run_id,
        input=call.input,
        output=call.output,
        score=draw(st.floats() | st.none()),
        reason=draw(_json),
        preprocess_step_result=draw(_json),
        analyze_step_result=draw(_json),
        analyze_prompt=draw(st.none() | _text),
    )
    failed = draw(st.booleans())
    record = ScoreRecord(
        id=run_id,
        scorer_id=draw(_text),
        scorer_name=draw(_text),
        scorer_description=draw(_text),
        has_judge=False,
        call=call,
        status="failed" if failed else "success",
        result=result,
        error=draw(_text) if failed else None,
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    if draw(st.booleans()):  # a redactor applies: encoded as before, through `to_row`
        redaction = _POLICY.start()
        record = ScoreRecord(**{**_fields(record), "redaction": redaction})
    return record


def _fields(record: ScoreRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_record_encodes_to_what_its_walked_row_encodes_to(data: st.DataObject) -> None:
    record = _record(data.draw)
    expected = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
    assert encode_record(record, convert=_ENCODE) == expected  # NaN is stored as text


@settings(max_examples=500)
@given(_json)
def test_storable_json_is_the_text_of_the_storable_value(value: Any) -> None:
    assert storable_json(value) == stored_json(storable(value))
