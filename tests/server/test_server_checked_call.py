"""A request's call is marked as checked (`AgentCall.fields_checked`), so its run is scored
without `check_run`: every call the request model lets through makes a run `check_run` accepts,
whatever the client sent (JSON values, of every kind) and whichever run id the call is given."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from scorewatch.core import ScorerRun
from scorewatch.core.pipeline import check_run
from scorewatch.server.http.models import ScoreRequest

pytestmark = pytest.mark.unit

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=4,
)
_ID = st.one_of(st.none(), st.text(max_size=5), st.integers(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(
    body=st.fixed_dictionaries(
        {"input": _JSON, "output": _JSON, "target": _ID},
        optional={
            "trace_id": _ID,
            "span_id": _ID,
            "run_id": _ID,
            "conversation_id": _ID,
            "request_context": _JSON,
            "ground_truth": _JSON,
            "metadata": _JSON,
        },
    ),
    made_up=st.one_of(st.none(), st.text(min_size=1, max_size=5)),
)
def test_every_call_a_request_makes_holds_what_check_run_accepts(
    body: dict[str, Any], made_up: str | None
) -> None:
    try:
        request = ScoreRequest.model_validate(body)
    except ValidationError:
        return  # refused at the door: never scored
    call = request.to_call(made_up)

    assert call.fields_checked
    check_run(ScorerRun.of_call(call, "scoring-run"), "s")  # raises if it would be refused
