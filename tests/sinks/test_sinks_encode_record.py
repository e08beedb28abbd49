"""`encode_record`, the SQLite writer's one-pass encoding: for any record, hostile values
included (NUL, unpaired surrogates, NaN and infinities, secret-looking keys, a redactor), the
same column values as `encode_row(record.to_row())`, the walk-first encoding it replaces;
`encode_row` gives what its column-by-column loop gave (kept here as the reference);
`record_json` (the JSONL sink's line) is the text of `to_row()`; `storable_json` is
`stored_json(storable(value))` for any plain JSON value, a text alone written as the text
written then checked was; a record's row values, read from its result's fields, are what its
attributes gave (`_row_values_by_attributes`, kept here as the reference)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorewatch.core.call import AgentCall
from scorewatch.core.not_scorable import NotScorableInfo
from scorewatch.core.records import JudgeStepRecord
from scorewatch.core.result import ScorerRunResult, ScorerRunSnapshot
from scorewatch.core.steps import camel_step
from scorewatch.privacy import PrivacyPolicy
from scorewatch.sinks.record import (
    JSON_COLUMNS,
    SCORE_COLUMNS,
    ScoreRecord,
    _entity,
    _jsonable,
    _storable_column,
    encode_record,
    encode_row,
    iso_timestamp,
    record_json,
)
from scorewatch.sinks.sqlite import _ENCODE
from scorewatch.sinks.storable import _storable_text_of, storable, storable_json, stored_json

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


# Few texts, so that records share their scorer and agent and the texts written once
# (`_written_once`) are looked up again, with values that hash alike but are written apart.
_shared = st.sampled_from(["s", "S", "\x00", "\ud800", "é", "NaN"])
_alike = st.sampled_from([True, False, 1, 0, 1.0, None])
# A call's metadata with the row's own flag among its keys, the flag's value in every form.
_metadata = st.dictionaries(_text | st.just("structuredOutput"), _json | _alike, max_size=3)


def _record(draw: st.DrawFn) -> ScoreRecord:
    run_id = draw(_text)
    trace = draw(st.booleans())
    call = AgentCall(
        input=draw(_json),
        output=draw(_json),
        target=draw(st.none() | _shared | _text),
        trace_id=draw(st.none() | _text),
        span_id=draw(st.none() | _text) if trace else None,
        score_source="trace" if trace else "live",
        run_id=draw(st.none() | _text),
        request_context=draw(st.none() | _json),
        ground_truth=draw(st.none() | _json),
        metadata=draw(st.none() | _metadata),
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
        scorer_id=draw(_shared | _text),
        scorer_name=draw(_shared | _text),
        scorer_description=draw(_shared | _text),
        has_judge=draw(_alike),
        scorer_declared_version=draw(_shared | _alike),
        call=call,
        status="failed" if failed else "success",
        result=result,
        error=draw(_text) if failed else None,
        failed_step="analyze" if failed else None,
        completed_steps=draw(st.sampled_from([(), ("preprocess",), ("preprocess", "analyze")])),
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    if draw(st.booleans()):  # a redactor applies: encoded as before, through `to_row`
        redaction = _POLICY.start()
        record = ScoreRecord(**{**_fields(record), "redaction": redaction})
    return record


def _fields(record: ScoreRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_record_encodes_to_what_its_walked_row_encodes_to(data: st.DataObject) -> None:
    record = _record(data.draw)
    expected = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
    assert encode_record(record, convert=_ENCODE) == expected  # NaN is stored as text


@settings(max_examples=500)
@given(_json)
def test_storable_json_is_the_text_of_the_storable_value(value: Any) -> None:
    assert storable_json(value) == stored_json(storable(value))


def _encode_row_by_column(
    row: Any, *, dumps: Any, as_json: Any = None, convert: Any = None, clean: Any = None
) -> tuple[Any, ...]:
    """`encode_row` as it was: one column after the other (the reference it must match)."""
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
            value = special[column](value if clean is None else clean(value))
        elif column == "reason" and not isinstance(value, str):
            # Cleaned first, as the walked row holds it: an infinity or NaN becomes its text
            # and is stored as that text (c73249b); any other reason as its JSON.
            value = value if clean is None else clean(value)
            value = value if isinstance(value, str) else dumps(value)
        elif clean is not None:
            value = clean(value)
        values.append(value)
    return tuple(values)


# Values a text column may hold in a hand-made row: text (hostile too), None, and what is not
# text (numbers, false values, an empty tuple, which cleaning makes a list).
_PLAIN = [c for c in SCORE_COLUMNS if c not in JSON_COLUMNS and c != "reason"]
_column = st.none() | _text | st.sampled_from([0, 0.0, False, True, (), [], {}, 7, float("nan")])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_encode_row_gives_what_the_column_by_column_loop_gave(data: st.DataObject) -> None:
    record = _record(data.draw)
    row = record._to_row(walk=False)[0]
    # A plain column or two replaced by odd values (one at a time, so that a false value is
    # not the only one of a row that is not text).
    for column in data.draw(st.lists(st.sampled_from(_PLAIN), max_size=2)):
        row[column] = data.draw(_column)
    ways: list[dict[str, Any]] = [
        _POSTGRES_WAY,
        {"dumps": stored_json, "convert": _ENCODE},
        {"dumps": stored_json, "as_json": repr, "convert": dict.fromkeys(["createdAt"], str)},
    ]
    for way in ways:
        expected = _encode_row_by_column(row, **way)
        assert repr(encode_row(row, **way)) == repr(expected)  # NaN compares by its text


# The way the text columns are cleaned as well as encoded (PostgreSQL's).
_POSTGRES_WAY: dict[str, Any] = {
    "dumps": storable_json,
    "convert": _ENCODE,
    "clean": _storable_column,
}


def _plain_record() -> ScoreRecord:
    call = AgentCall(input="q", output="a", target="bot")
    return ScoreRecord(
        id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=False,
        call=call, status="success",
    )  # fmt: skip


@pytest.mark.parametrize("reason", [float("inf"), float("-inf"), float("nan"), 0.5, [1.5]])
def test_a_reason_that_is_not_text_encodes_as_the_loop_does(reason: Any) -> None:
    row, way = {**_plain_record()._to_row(walk=False)[0], "reason": reason}, _POSTGRES_WAY
    encoded = encode_row(row, **way)
    assert repr(encoded) == repr(_encode_row_by_column(row, **way))
    if isinstance(reason, float) and reason != 0.5:  # the walk's text, stored as it is
        assert encoded[SCORE_COLUMNS.index("reason")] == storable(reason)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_records_json_line_is_the_text_of_its_row(data: st.DataObject) -> None:
    record = _record(data.draw)
    assert record_json(record) == stored_json(record.to_row())


@pytest.mark.parametrize(
    "odd", [0, 0.0, False, True, (), [], {}, 7, float("nan"), "\x00", "\ud800"]
)
def test_each_plain_column_with_an_odd_value_encodes_as_the_loop_did(odd: Any) -> None:
    record, way = _plain_record(), _POSTGRES_WAY
    for column in _PLAIN:
        row = {**record._to_row(walk=False)[0], column: odd}
        assert repr(encode_row(row, **way)) == repr(_encode_row_by_column(row, **way)), column


def test_texts_written_once_tell_values_that_hash_alike_apart() -> None:
    call = AgentCall(input="q", output="a", target="bot")
    for first, second in [(True, 1), (1, True), (False, 0), (0, 0.0), (None, "1")]:
        encoded = []
        for value in (first, second, first):
            record = ScoreRecord(
                id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=value,
                call=call, status="success", scorer_declared_version=value,
            )  # fmt: skip
            walked = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
            assert encode_record(record, convert=_ENCODE) == walked
            encoded.append(walked[SCORE_COLUMNS.index("scorer")])
        assert encoded[0] != encoded[1]
        assert encoded[0] == encoded[2]


def test_agents_written_once_tell_values_that_hash_alike_apart() -> None:
    # The agent's text is remembered with the scorer's: its `target` (text for a typed call)
    # in every form that hashes alike, a live call's and a trace's.
    for first, second in [(True, 1), (1, True), (1.0, 1), ("1", "1")]:
        encoded = []
        ways = [(first, "live"), (second, "live"), (first, "trace"), (first, "live")]
        for target, source in ways:
            call = AgentCall(input="q", output="a", target=target, score_source=source)
            record = ScoreRecord(
                id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=False,
                call=call, status="success",
            )  # fmt: skip
            walked = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
            assert encode_record(record, convert=_ENCODE) == walked
            encoded.append(walked[SCORE_COLUMNS.index("entity")])
        assert (encoded[0] != encoded[1]) == (type(first) is not type(second))
        assert encoded[0] == encoded[3] != encoded[2]


@pytest.mark.parametrize("reason", [math.inf, -math.inf, math.nan, [math.inf]])
def test_a_reason_that_json_cannot_write_is_stored_as_the_walked_row_stores_it(
    reason: Any,
) -> None:
    call = AgentCall(input="q", output="a", target="bot")
    result = ScorerRunResult(run_id="r", input="q", output="a", score=0.5, reason=reason)
    record = ScoreRecord(
        id="r",
        scorer_id="s",
        scorer_name="s",
        scorer_description="",
        has_judge=False,
        scorer_declared_version=None,
        call=call,
        status="success",
        result=result,
        error=None,
        failed_step=None,
        completed_steps=(),
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    expected = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
    assert encode_record(record, convert=_ENCODE) == expected


# Metadata from a few keys and values, so that rows repeat it and its cleaned form is taken
# from `_CLEANED`: secret-looking keys, URL credentials, what cleaning replaces, values that
# hash alike (True, 1, 1.0), lists of text and lists with other values.
_flat_metadata = st.dictionaries(
    st.sampled_from(["apiKey", "spanName", "toolCalls", "structuredOutput", "url", "\x00k"]),
    st.sampled_from(
        ["x", "https://u:p@h/?token=t", "\x00", "\ud800", True, 1, 1.0, None, "NaN", (),
         ["a", "\x00"], ["https://u:p@h"], ["a", 1], [], [True]]
    ),
    max_size=4,
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_metadata_cleaned_once_is_what_the_walk_makes(data: st.DataObject) -> None:
    record = _record(data.draw)
    call = AgentCall(**{**record.call.to_dict(), "metadata": data.draw(_flat_metadata)})
    record = ScoreRecord(**{**_fields(record), "call": call})
    expected = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
    for _ in range(2):  # the second time from what the first remembered
        assert encode_record(record, convert=_ENCODE) == expected
        assert record_json(record) == stored_json(record.to_row())


def test_metadata_values_that_hash_alike_are_cleaned_apart() -> None:
    for values in [(True, 1, 1.0, True), (["a"], ("a",), "a", ["a"]), (None, "None", None)]:
        for value in values:
            call = AgentCall(input="q", output="a", target="bot", metadata={"flag": value})
            record = ScoreRecord(
                id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=False,
                call=call, status="success",
            )  # fmt: skip
            walked = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
            assert encode_record(record, convert=_ENCODE) == walked, value


def test_a_redactor_that_finds_nothing_leaves_the_row_a_plain_run_stores() -> None:
    # `encode_record` takes the plain run's path when the redactor replaces nothing: the
    # stored row is the one the same run without a policy stores; with an address to
    # replace, the redacted one.
    policy = PrivacyPolicy(redact=["all"])
    for output, replaced in [("Refunds take 30 days.", False), ("Mail jo@example.com", True)]:
        call = AgentCall(input="What is the refund policy?", output=output, target="bot")
        plain = ScoreRecord(
            id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=False,
            call=call, status="success", created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        )  # fmt: skip
        private = ScoreRecord(**{**_fields(plain), "redaction": policy.start()})
        walked = encode_row(private.to_row(), dumps=stored_json, convert=_ENCODE)
        assert encode_record(private, convert=_ENCODE) == walked
        assert record_json(private) == stored_json(private.to_row())
        stored_output = walked[SCORE_COLUMNS.index("output")]
        assert "jo@example.com" not in stored_output
        assert (stored_output == stored_json(output)) is not replaced
        assert (walked == encode_record(plain, convert=_ENCODE)) is not replaced


def test_the_rows_columns_are_made_in_their_stored_order() -> None:
    # `encode_record` takes the values of `_to_row`'s dict as they come: in column order.
    call = AgentCall(input="q", output="a", target="bot", metadata={"k": "v"}, run_id="r")
    record = ScoreRecord(
        id="run", scorer_id="s", scorer_name="S", scorer_description="", has_judge=False,
        call=call, status="success",
    )  # fmt: skip
    for private in (None, _POLICY.start()):
        row, _redacted = ScoreRecord(**{**_fields(record), "redaction": private})._to_row(False)
        assert tuple(row) == SCORE_COLUMNS


def _row_values_by_attributes(record: ScoreRecord, plain: bool) -> list[Any]:
    """`ScoreRecord._row_values` as it was: the result's fields read as attributes, the score,
    reason and judge records by the record's own properties (kept as the reference)."""
    result = record.result
    call = record.call
    stamp = iso_timestamp(record.created_at)
    reason = record.reason
    entity_id, entity, entity_type = _entity(call)
    return [
        *(record.id, record.scorer_id, entity_id, record.id),
        call.input if plain else _jsonable(call.input),
        call.output if plain else _jsonable(call.output),
        *(None, None, None, None, record.score),
        _jsonable(result.analyze_step_result) if result else None,
        result.analyze_prompt if result else None,
        reason if reason is None or isinstance(reason, str) else _jsonable(reason),
        result.generate_reason_prompt if result else None,
        *(record._scorer_fields(), None, record.source, entity, entity_type, False),
        *(call.trace_id, call.span_id, None, call.conversation_id),
        _jsonable(result.preprocess_step_result) if result else None,
        result.preprocess_prompt if result else None,
        result.generate_score_prompt if result else None,
        result.generate_reason_prompt if result else None,
        *(stamp, stamp, call.target, record.status, record.judge_records(), record.error),
        *(record.error_code, record.error_type),
        camel_step(record.failed_step) if record.failed_step else None,
        list(map(camel_step, record.completed_steps)),
        *(record.scorer_version, record.review),
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_row_values_read_from_the_results_fields_are_what_its_attributes_give(
    data: st.DataObject,
) -> None:
    record = _record(data.draw)
    kind = data.draw(st.sampled_from(["as drawn", "no result", "snapshot", "not scorable"]))
    if kind == "no result":  # a run that failed before any step
        record = ScoreRecord(**{**_fields(record), "result": None, "status": "failed"})
    elif kind == "snapshot":  # read back from a row, or a failed run's partial result
        snapshot = ScorerRunSnapshot(run_id=record.id, score=data.draw(st.floats() | st.none()))
        record = ScoreRecord(**{**_fields(record), "result": snapshot})
    elif kind == "not scorable":
        result = ScorerRunResult(
            run_id=record.id,
            output=None,
            not_scorable=NotScorableInfo(step="preprocess", reason=data.draw(_text)),
            judge={"preprocess": JudgeStepRecord(executions=[])},
        )
        record = ScoreRecord(**{**_fields(record), "result": result, "status": "not_scorable"})
    plain = data.draw(st.booleans())
    # (NaN is not equal to itself: the values compared as their JSON text, types kept.)
    assert _typed(record._row_values(plain)) == _typed(_row_values_by_attributes(record, plain))
    # And its encoding (a metadata told from the call's fields) is the walked row's.
    expected = encode_row(record.to_row(), dumps=stored_json, convert=_ENCODE)
    assert encode_record(record, convert=_ENCODE) == expected


def _typed(values: list[Any]) -> list[tuple[type, str]]:
    return [(type(value), stored_json(value)) for value in values]


_hostile_text = st.one_of(
    st.text(st.characters(exclude_categories=())),
    st.sampled_from(["", "\x00", "a\x00b", "\ud800", "x\udfffy", "é\x00", "\U0001f600", "NaN"]),
    st.builds(lambda part, count: part * count, _text, st.integers(0, 20_000)),
)


@settings(max_examples=500)
@given(_hostile_text)
def test_a_text_alone_is_written_as_the_written_then_checked_text_was(text: str) -> None:
    # The text written at once against `storable_json`'s way for any value (the reference).
    assert storable_json(text) == _storable_text_of(stored_json(text), text)
    assert storable_json(text) == stored_json(storable(text))


def test_a_text_of_a_str_subclass_is_written_as_any_value() -> None:
    class Text(str):
        pass

    for text in (Text("plain"), Text("a\x00b"), Text("\ud800")):
        assert storable_json(text) == stored_json(storable(text))
