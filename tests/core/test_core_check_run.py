"""`check_run`'s shortcut for the runs calls make (text fields, mappings keyed by text, as a
trace's run has its metadata and correlation context) against the field-by-field checks
(differential: the same runs accepted, the same refused)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorewatch.core.pipeline import check_run
from scorewatch.core.result import ScorerRun
from scorewatch.errors import ScorewatchError

pytestmark = pytest.mark.unit


class _Text(str):
    pass


def _by_fields(run: ScorerRun) -> bool:
    """Whether the checks field by field accept `run` (the path without the shortcut)."""
    for name in ("run_id", "score_source", "target", "target_scope", "target_entity_type"):
        value = getattr(run, name)
        if value is not None and not isinstance(value, str):
            return False
    for name in ("target_metadata", "target_correlation_context"):
        value = getattr(run, name)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(key, str) for key in value)
        ):
            return False
    keys = run.request_context_keys
    return keys is None or (isinstance(keys, list) and all(isinstance(key, str) for key in keys))


_keys = st.one_of(st.text(max_size=5), st.integers(0, 3), st.just(_Text("k")), st.none())
_mappings = st.one_of(
    st.none(),
    st.dictionaries(_keys, st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4),
    st.just([("a", 1)]),
    st.just("text"),
)
_texts = st.one_of(st.none(), st.text(max_size=5), st.just(_Text("t")), st.integers(0, 2))


@settings(max_examples=400, deadline=None)
@given(
    metadata=_mappings,
    correlation=_mappings,
    target=_texts,
    scope=_texts,
    keys=st.one_of(st.none(), st.lists(_keys, max_size=2)),
)
def test_check_run_accepts_what_the_field_checks_accept(
    metadata: Any, correlation: Any, target: Any, scope: Any, keys: Any
) -> None:
    run = ScorerRun(
        output="o",
        target=target,
        target_scope=scope,
        target_metadata=metadata,
        target_correlation_context=correlation,
        request_context_keys=keys,
    )
    accepted = True
    try:
        check_run(run, "scorer")
    except ScorewatchError:
        accepted = False
    assert accepted == _by_fields(run)
