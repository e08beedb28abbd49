"""`ScorerRun.of_call` builds the run by position: it must be the run the keyword form builds,
field for field, whatever the call holds (a field added to the run or moved fails here)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorewatch.core.call import AgentCall
from scorewatch.core.result import ScorerRun

pytestmark = pytest.mark.unit

_TEXT = st.none() | st.text(max_size=8)


def _by_keyword(call: AgentCall, run_id: str | None) -> ScorerRun:
    span = call.score_source == "trace"
    return ScorerRun(
        output=call.output,
        input=call.input,
        run_id=run_id,
        ground_truth=call.ground_truth,
        request_context=call.request_context,
        score_source=call.score_source,
        target=call.target,
        target_scope="span" if span else None,
        target_entity_type=call.entity_type,
        target_trace_id=call.trace_id,
        target_span_id=call.span_id,
        target_correlation_context={"traceId": call.trace_id, "spanId": call.span_id}
        if span
        else None,
        target_metadata=call.metadata,
    )


def _values(run: ScorerRun) -> dict[str, Any]:
    return {field.name: getattr(run, field.name) for field in fields(run)}


@given(
    st.builds(
        AgentCall,
        input=_TEXT,
        output=_TEXT,
        target=_TEXT,
        trace_id=_TEXT,
        span_id=_TEXT,
        run_id=_TEXT,
        request_context=st.none() | st.dictionaries(st.text(max_size=3), st.integers()),
        ground_truth=_TEXT,
        metadata=st.none() | st.dictionaries(st.text(max_size=3), st.integers()),
        score_source=st.sampled_from(["live", "experiment", "trace", "direct"]),
        entity_type=_TEXT,
        conversation_id=_TEXT,
    ),
    _TEXT,
)
def test_of_call_is_the_keyword_construction(call: AgentCall, run_id: str | None) -> None:
    run = ScorerRun.of_call(call, run_id)
    assert _values(run) == _values(_by_keyword(call, run_id))
    assert run == _by_keyword(call, run_id)


def test_of_call_names_each_field_by_its_own_value() -> None:
    """Every field a distinct value, so a swapped position cannot pass unseen."""
    call = AgentCall(
        input="in",
        output="out",
        target="agent",
        trace_id="t" * 32,
        span_id="s" * 16,
        run_id="agent-run",
        request_context={"user": 1},
        ground_truth="truth",
        metadata={"m": 2},
        score_source="trace",
        entity_type="agent-kind",
        conversation_id="c",
    )
    assert _values(ScorerRun.of_call(call, "scorer-run")) == {
        "output": "out",
        "input": "in",
        "run_id": "scorer-run",
        "ground_truth": "truth",
        "request_context": {"user": 1},
        "expected_trajectory": None,
        "score_source": "trace",
        "target": "agent",
        "target_scope": "span",
        "target_entity_type": "agent-kind",
        "target_trace_id": "t" * 32,
        "target_span_id": "s" * 16,
        "target_correlation_context": {"traceId": "t" * 32, "spanId": "s" * 16},
        "target_metadata": {"m": 2},
        "score_trace_id": None,
        "request_context_keys": None,
    }
