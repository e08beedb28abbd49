"""The request path's cheaper forms against the code they replaced (kept here as oracles):
`check_values`' early return for bodies with nothing to check. Same refusals with the same
fields and messages. `_call_json` is checked against its loop of appends as written here (a
comprehension measured no cheaper under callgrind, so the loop stays: this pins its text)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from scorewatch.core.call import CALL_FIELDS, AgentCall
from scorewatch.server.config.file import key_path
from scorewatch.server.http.errors import ApiError
from scorewatch.server.http.models import ScoreRequest
from scorewatch.server.http.routes.score_intake import check_values
from scorewatch.server.intake import admission
from scorewatch.server.intake.admission import BAD_ID_MESSAGE, BAD_ID_TEXT
from scorewatch.sinks.storable import non_finite_path

pytestmark = pytest.mark.unit

_HUGE_NUMBER = re.compile(rb"[0-9][eE]\+?[0-9]{3}|[0-9]{309}")


def _old_check_values(requests: Sequence[ScoreRequest], raw: bytes, prefix: str = "") -> None:
    """`check_values` before the early return (main at 2ee4664), the oracle."""
    escaped = b"\\u" in raw
    maybe_non_finite: bool | None = None
    problems: list[dict[str, str]] = []
    for index, request in enumerate(requests):
        item = f"items[{index}]." if prefix else ""
        if escaped:
            for name in request.ID_FIELDS:
                value = getattr(request, name)
                if isinstance(value, str) and BAD_ID_TEXT.search(value):
                    problems.append({"field": f"{item}{name}", "message": BAD_ID_MESSAGE})
            for position, scorer_id in enumerate(request.scorers or ()):
                if BAD_ID_TEXT.search(scorer_id):
                    field = f"{item}scorers[{position}]"
                    problems.append({"field": field, "message": BAD_ID_MESSAGE})
        for name in ScoreRequest.CONTENT_FIELDS:
            content = getattr(request, name)
            if content is None or isinstance(content, str):
                continue
            if maybe_non_finite is None:
                maybe_non_finite = (
                    b"NaN" in raw or b"Infinity" in raw or _HUGE_NUMBER.search(raw) is not None
                )
            where = non_finite_path(content) if maybe_non_finite else None
            if where is not None:
                problems.append(
                    {
                        "field": key_path([f"{item}{name}", *where]),
                        "message": "NaN, Infinity and numbers past a double's range are "
                        "not stored as numbers; send a finite number, null or a string",
                    }
                )
    if problems:
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
        raise ApiError(422, "invalid_request", summary, fields=problems)


def _outcome(check: Any, requests: Sequence[ScoreRequest], raw: bytes, prefix: str) -> Any:
    try:
        check(requests, raw, prefix)
    except ApiError as error:
        return (error.status, error.code, error.message, error.extra)
    return None


_texts = st.text(alphabet=st.sampled_from(["a", "\x00", "\ud800", "é", '"', "\\", "u"]))
_numbers = st.sampled_from(
    ["1", "1.5", "NaN", "Infinity", "-Infinity", "1e400", "1E+308", "9" * 320]
)
_scalars = st.one_of(
    st.none().map(lambda _: "null"),
    st.booleans().map(lambda b: "true" if b else "false"),
    _numbers,
    _texts.map(lambda t: json.dumps(t)),
    _texts.map(lambda t: json.dumps(t, ensure_ascii=False)),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")
        | st.lists(st.tuples(_texts, inner), max_size=3).map(
            lambda kvs: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in kvs) + "}"
        )
    ),
    max_leaves=5,
)
_ids = st.one_of(_texts.map(json.dumps), _texts.map(lambda t: json.dumps(t, ensure_ascii=False)))


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    fields = {"input": draw(_values), "output": draw(_values), "target": draw(_ids)}
    for name in ("request_context", "ground_truth", "metadata"):
        if draw(st.booleans()):
            fields[name] = draw(_values)
    for name in ("trace_id", "span_id", "run_id", "conversation_id"):
        if draw(st.booleans()):
            fields[name] = draw(_ids)
    if draw(st.booleans()):
        fields["scorers"] = "[" + ",".join(draw(st.lists(_ids, min_size=1, max_size=3))) + "]"
    return ("{" + ",".join(f'"{k}":{v}' for k, v in fields.items()) + "}").encode(
        "utf-8", "surrogatepass"
    )


# Generating bodies is slow on a loaded machine; the check itself is quick.
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_bodies(), min_size=1, max_size=2), st.booleans())
def test_check_values_refuses_exactly_as_before(bodies: list[bytes], batch: bool) -> None:
    requests: list[ScoreRequest] = []
    for body in bodies:
        try:
            requests.append(ScoreRequest.model_validate_json(body))
        except ValidationError:
            continue  # the route answers it before any check
    if not requests:
        return
    raw = b"[" + b",".join(bodies) + b"]" if batch else bodies[0]
    prefix = "items" if batch else ""
    assert _outcome(check_values, requests, raw, prefix) == _outcome(
        _old_check_values, requests, raw, prefix
    )


def test_check_values_still_refuses_what_the_early_return_skips_walking() -> None:
    # No escape in the body, but a number past a double's range in a structure: walked.
    body = b'{"input": {"a": [1, 1e400]}, "output": "a", "target": "bot"}'
    request = ScoreRequest.model_validate_json(body)
    assert _outcome(check_values, [request], body, "") == _outcome(
        _old_check_values, [request], body, ""
    )
    assert _outcome(check_values, [request], body, "") is not None


def _old_call_json(call: AgentCall, *, sent_run_id: bool = True) -> str:
    """`_call_json` as a loop of appends (main at 2ee4664), the oracle."""
    values = admission._sorted_values(call)
    if not sent_run_id:
        at = admission._SORTED_RUN_ID_AT
        values = (*values[:at], None, *values[at + 1 :])
    parts: list[str] = []
    for key, null, value in zip(admission._KEY_TEXTS, admission._NULL_TEXTS, values, strict=True):
        if value is None:
            parts.append(null)
        elif type(value) is str:
            parts.append(key + admission._ascii_text(value))
        else:
            parts.append(key + admission._canonical_json(value))
    return "[{" + ",".join(parts) + "}]"


class _Text(str):
    """A str subclass: not `type(value) is str`, written by the encoder."""


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
_any_calls = st.builds(
    AgentCall,
    **{name: _json_like | st.text().map(_Text) | st.tuples(st.text()) for name in CALL_FIELDS},
)


@given(_any_calls, st.booleans())
def test_a_calls_digest_text_is_the_same_as_before(call: AgentCall, sent: bool) -> None:
    assert admission._call_json(call, sent_run_id=sent) == _old_call_json(call, sent_run_id=sent)
