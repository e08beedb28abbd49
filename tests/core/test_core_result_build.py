"""The result a run builds, against the rule it is built by, written plainly: every run field,
the score, each step result that is set (its step completed, or a value sits in `ctx.results`),
the not-scorable info, the judge records and the version metadata, as
`ScorerRunResult.model_construct` makes them. The pipeline writes the fields once into the
instance's dictionary; this checks that nothing a user reads (values, which fields are set, the
wire form) differs from that."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scorewatch as sw
from scorewatch.core.not_scorable import NotScorable, NotScorableInfo
from scorewatch.core.pipeline import run_scorer
from scorewatch.core.result import RESULT_RUN_FIELDS, ScorerRun, ScorerRunResult

pytestmark = pytest.mark.unit

_VALUES = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.text(max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(0, 2), max_size=2),
    st.just("NOT_SCORABLE"),
)
_SCORES = st.one_of(st.floats(0, 1), st.integers(0, 3), st.just("NOT_SCORABLE"))
_STEP_FIELD = {
    "preprocess": "preprocess_step_result",
    "analyze": "analyze_step_result",
    "generate_reason": "reason",
}


def _returning(value: Any) -> Any:
    return sw.not_scorable("no") if value == "NOT_SCORABLE" else value


@settings(max_examples=300, deadline=None)
@given(
    preprocess=st.one_of(st.just("absent"), _VALUES),
    analyze=st.one_of(st.just("absent"), _VALUES),
    score=_SCORES,
    reason=st.one_of(st.just("absent"), _VALUES),
    planted=st.one_of(st.none(), st.integers(1, 3)),
    run_fields=st.fixed_dictionaries(
        {},
        optional={
            "input": st.text(max_size=3),
            "ground_truth": st.integers(),
            "target": st.text(max_size=3),
            "score_source": st.sampled_from(["live", "trace"]),
            "target_metadata": st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
        },
    ),
)
def test_the_result_is_the_plain_rule(
    preprocess: Any, analyze: Any, score: Any, reason: Any, planted: Any, run_fields: Any
) -> None:
    scorer = sw.create_scorer(id="built", description="d")
    steps: dict[str, Any] = {"preprocess": preprocess, "analyze": analyze}
    for name, value in steps.items():
        if value == "absent":
            continue
        if name == "preprocess" and planted is not None:
            # A step writing a later step's result into the shared `ctx.results`.
            def plant(ctx: Any, value: Any = value) -> Any:
                ctx.results.analyze_step_result = planted
                return _returning(value)

            scorer = scorer.preprocess(plant)
        else:
            scorer = getattr(scorer, name)(lambda ctx, value=value: _returning(value))
    scorer = scorer.generate_score(lambda ctx: _returning(score))
    if reason != "absent":
        scorer = scorer.generate_reason(lambda ctx: _returning(reason))
    run = ScorerRun(output="out", run_id="r1", **run_fields)

    result = asyncio.run(run_scorer(scorer, run, True))

    # The rule: run the steps in order, up to the first not-scorable one.
    values: dict[str, Any] = {name: getattr(run, name) for name in RESULT_RUN_FIELDS}
    step_values: dict[str, Any] = {}
    completed: list[str] = []
    skipped = None
    final_score = None
    for step in scorer.steps:
        given_back = {**steps, "generate_score": score, "generate_reason": reason}[step.name]
        returned = _returning(given_back)
        if step.name == "preprocess" and planted is not None:
            step_values["analyze"] = planted
        if isinstance(returned, NotScorable):
            skipped = step.name
            final_score = None
            break
        step_values[step.name] = returned
        if step.name == "generate_score":
            final_score = returned
        completed.append(step.name)
    values["score"] = final_score
    for name, field in _STEP_FIELD.items():
        if step_values.get(name) is not None or name in completed:
            values[field] = step_values.get(name)
    values["judge"] = None
    if skipped is not None:
        values["not_scorable"] = NotScorableInfo(step=skipped, reason="no")
    values["metadata"] = scorer.version_metadata.copy()
    expected = ScorerRunResult.model_construct(**values)

    assert list(result.__dict__.items()) == list(expected.__dict__.items())
    assert result.model_fields_set == expected.model_fields_set
    assert result.model_dump(mode="json", by_alias=True) == expected.model_dump(
        mode="json", by_alias=True
    )
    assert result.metadata is not scorer.version_metadata  # each result its own copy


def test_every_run_field_reaches_the_result_as_the_run_has_it() -> None:
    # Each run field a value of its own (a typed field's of its type), so that a field copied
    # into another's place, or left out, shows; the pipeline writes them one by one.
    values: dict[str, Any] = {
        name: {"field": name} if name.endswith(("_metadata", "_context")) else f"{name}-value"
        for name in RESULT_RUN_FIELDS
    }
    values["request_context"] = ["context"]  # a free-form field: any value
    run = ScorerRun(**values)
    scorer = sw.create_scorer(id="fields", description="d").generate_score(lambda ctx: 1)

    result = asyncio.run(run_scorer(scorer, run, True))

    assert {name: getattr(result, name) for name in RESULT_RUN_FIELDS} == values
    assert list(result.__dict__) == list(ScorerRunResult.model_fields)
