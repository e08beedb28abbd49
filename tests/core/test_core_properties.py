"""Property tests: whatever JSON-like data a scorer is given and whatever text its judge returns,
a run ends in a result or a documented error, and results survive a JSON round trip unchanged."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import scorewatch as sw
from core_support import judge_config, observing
from scorewatch.core.result import ScorerRunResult, ScorerRunSnapshot
from scorewatch.core.schema import parse_json_reply
from scorewatch.judge import JudgeProviderError, JudgeReply, StructuredOutputError
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

PROPERTY_SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)

# Texts a judge might send back: prose, JSON of any shape, near-miss scores, non-JSON numbers,
# fenced JSON, truncations.
score_like = st.one_of(
    st.floats(),
    st.integers(),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400, '"0.5"', "true"]),
)
judge_texts = st.one_of(
    st.text(max_size=40),
    json_values.map(json.dumps),
    json_objects.map(json.dumps),
    score_like.map(
        lambda value: '{"score": %s}' % (value if isinstance(value, str) else json.dumps(value))
    ),
    json_objects.map(lambda obj: f"```json\n{json.dumps(obj)}\n```"),
    json_objects.map(lambda obj: json.dumps(obj)[:-1]),
)
judge_replies = st.one_of(
    judge_texts,
    judge_texts.map(lambda text: JudgeReply(text=text, finish_reason="length")),
    st.just(JudgeProviderError("provider down", status_code=503)),
    st.just(ValueError("unexpected")),
)


def strict_json(data: Any) -> Any:
    return json.loads(json.dumps(data, allow_nan=False))


def assert_round_trips(result: ScorerRunResult) -> None:
    again = ScorerRunResult.model_validate(
        strict_json(result.model_dump(mode="json", by_alias=True))
    )
    assert again == result
    assert again.model_dump(mode="json", by_alias=True) == result.model_dump(
        mode="json", by_alias=True
    )


def assert_documented_failure(error: sw.ScorerRunError, scorer: sw.Scorer) -> None:
    step_names = [step["name"] for step in scorer.get_steps()]
    assert error.failed_step in step_names
    assert error.completed_steps == step_names[: len(error.completed_steps)]
    assert error.message.startswith("Scorer Run Failed: ")
    strict_json(error.to_dict())
    if error.result is not None:
        snapshot = error.result
        again = ScorerRunSnapshot.model_validate(
            strict_json(snapshot.model_dump(mode="json", by_alias=True))
        )
        assert again == snapshot


def run(scorer: sw.Scorer, **fields: Any) -> ScorerRunResult | sw.ScorerRunError:
    try:
        return asyncio.run(scorer.run(**fields))
    except sw.ScorerRunError as error:
        return error


# ---------------------------------------------------------------------- function scorers


def _echo_scorer() -> sw.Scorer:
    return (
        sw.create_scorer(id="echo", description="echoes what it is given")
        .preprocess(lambda ctx: {"input": ctx.run.input, "output": ctx.run.output})
        .analyze(lambda ctx: [ctx.run.ground_truth, ctx.run.request_context])
        .generate_score(lambda ctx: len(json.dumps(ctx.run.output)) % 7 / 7)
        .generate_reason(lambda ctx: f"{ctx.score}: {json.dumps(ctx.run.input)[:30]}")
    )


@PROPERTY_SETTINGS
@given(
    input=json_values,
    output=json_values,
    ground_truth=json_values,
    request_context=json_values,
    target_metadata=st.none() | json_objects,
    run_id=st.none() | st.text(max_size=12),
)
def test_function_scorer_on_any_json_gives_a_round_tripping_result(
    input: Any,
    output: Any,
    ground_truth: Any,
    request_context: Any,
    target_metadata: dict[str, Any] | None,
    run_id: str | None,
) -> None:
    outcome = run(
        _echo_scorer(),
        input=input,
        output=output,
        ground_truth=ground_truth,
        request_context=request_context,
        target_metadata=target_metadata,
        run_id=run_id,
    )
    assert isinstance(outcome, ScorerRunResult)
    assert outcome.input == input
    assert outcome.output == output
    assert outcome.preprocess_step_result == {"input": input, "output": output}
    if run_id:
        assert outcome.run_id == run_id
    assert_round_trips(outcome)


@PROPERTY_SETTINGS
@given(returned=json_values, output=json_values)
def test_generate_score_returning_any_json_gives_a_result_or_a_documented_error(
    returned: Any, output: Any
) -> None:
    scorer = (
        sw.create_scorer(id="any-score", description="d")
        .analyze(lambda ctx: returned)
        .generate_score(lambda ctx: ctx.results.analyze_step_result)
    )
    outcome = run(scorer, output=output)
    if isinstance(outcome, sw.ScorerRunError):
        assert_documented_failure(outcome, scorer)
        assert outcome.failed_step == "generate_score"
        assert isinstance(outcome.__cause__, sw.ScorewatchError)
        assert "'any-score'" in outcome.message
    else:
        assert isinstance(returned, int | float) and not isinstance(returned, bool)
        assert outcome.score == float(returned)
        assert_round_trips(outcome)


# ------------------------------------------------------------------------ prompt scorers

ANALYZE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


def _judged_scorer(judge: ScriptedJudge, analyze_schema: Any) -> sw.Scorer:
    return (
        sw.create_scorer(id="judged", description="d", judge=judge_config(judge))
        .analyze(
            sw.PromptStep(
                "a",
                lambda ctx: f"analyze {json.dumps(ctx.run.output)[:50]}",
                output_schema=analyze_schema,
            )
        )
        .generate_score(sw.PromptStep("s", lambda ctx: "score"))
        .generate_reason(sw.PromptStep("r", lambda ctx: f"explain {ctx.score}"))
    )


def _check_records(outcome: ScorerRunResult) -> None:
    assert outcome.judge is not None
    for record in outcome.judge.values():
        (execution,) = record.executions
        assert execution.status == "success"
        assert 1 <= execution.attempt_count <= 2
        assert 1 <= execution.model_call_count <= execution.attempt_count


@PROPERTY_SETTINGS
@given(
    replies=st.lists(judge_replies, min_size=5, max_size=5),
    strict_schema=st.booleans(),
    input=json_values,
    output=json_values,
)
def test_any_judge_replies_give_a_result_or_a_documented_error(
    replies: list[Any], strict_schema: bool, input: Any, output: Any
) -> None:
    judge = ScriptedJudge(replies)
    scorer = _judged_scorer(judge, ANALYZE_SCHEMA if strict_schema else {"type": "object"})
    outcome = run(scorer, input=input, output=output)
    assert judge.calls <= 5
    if isinstance(outcome, sw.ScorerRunError):
        assert_documented_failure(outcome, scorer)
        assert outcome.__cause__ is not None
        if outcome.result is not None and outcome.result.judge is not None:
            failed = outcome.result.judge[outcome.failed_step].executions[-1]
            assert failed.status == "failed"
    else:
        assert type(outcome.score) in (int, float)
        _check_records(outcome)
        assert_round_trips(outcome)


@PROPERTY_SETTINGS
@given(score=st.floats(allow_nan=False, allow_infinity=False), reason=st.text(max_size=40))
def test_well_formed_judge_answers_always_succeed(score: float, reason: str) -> None:
    judge = ScriptedJudge(['{"ok": true}', json.dumps({"score": score}), reason])
    outcome = run(_judged_scorer(judge, ANALYZE_SCHEMA), output="o")
    assert isinstance(outcome, ScorerRunResult)
    assert outcome.score == score
    assert outcome.reason == reason
    assert judge.calls == 3
    _check_records(outcome)
    assert_round_trips(outcome)


# ------------------------------------------------------------------------------ the parser


@settings(max_examples=200, deadline=None)
@given(text=judge_texts, truncated=st.booleans())
def test_reply_parser_returns_strict_json_or_a_structured_output_error(
    text: str, truncated: bool
) -> None:
    try:
        value = parse_json_reply(text, "length" if truncated else "stop")
    except StructuredOutputError as error:
        assert error.code.startswith("STRUCTURED_OUTPUT_")
        return
    assert value is not None
    assert strict_json(value) == value


# ------------------------------------------------------------------ the typed run fields

TYPED_RUN_FIELDS = (
    "run_id",
    "target",
    "target_trace_id",
    "target_span_id",
    "target_metadata",
    "score_source",
)


@PROPERTY_SETTINGS
@given(field=st.sampled_from(TYPED_RUN_FIELDS), value=json_values)
# A string where a mapping belongs: the fast path for plain runs once let it through.
@example(field="target_metadata", value="")
@example(field="target_metadata", value="text")
def test_any_json_in_a_typed_run_field_gives_a_loadable_result_or_a_clear_error(
    field: str, value: Any
) -> None:
    scorer = sw.create_scorer(id="typed", description="d").generate_score(lambda ctx: 0.5)
    try:
        outcome = asyncio.run(scorer.run(output="o", **{field: value}))
    except sw.ScorewatchError as error:
        assert not isinstance(error, sw.ScorerRunError)
        assert error.code == "SCOREWATCH_SCORER_INVALID_RUN"
        assert "'typed'" in error.message and repr(field) in error.message
        return
    assert_round_trips(outcome)


# ------------------------------------------------------------ random scorer structures

STEP_KINDS = st.sampled_from(["function", "prompt", "failing-function"])


def _build_random_scorer(
    judge: ScriptedJudge, kinds: dict[str, str]
) -> tuple[sw.Scorer, list[str]]:
    scorer = sw.create_scorer(id="random", description="d", judge=judge_config(judge))
    built: list[str] = []
    for step in ("preprocess", "analyze", "generate_score", "generate_reason"):
        kind = kinds.get(step)
        if kind is None:
            continue
        if kind == "prompt":
            schema = {"type": "object"} if step in ("preprocess", "analyze") else None
            definition: Any = sw.PromptStep(step, lambda ctx: "p", output_schema=schema)
        elif kind == "failing-function":

            def definition(ctx: sw.StepContext) -> Any:
                raise RuntimeError("function step failed")
        elif step == "generate_score":

            def definition(ctx: sw.StepContext) -> Any:
                return 0.5
        else:

            def definition(ctx: sw.StepContext) -> Any:
                return {"from": "function"}

        scorer = getattr(scorer, step)(definition)
        built.append(step)
    return scorer, built


@PROPERTY_SETTINGS
@given(
    kinds=st.fixed_dictionaries(
        {"generate_score": STEP_KINDS},
        optional={"preprocess": STEP_KINDS, "analyze": STEP_KINDS, "generate_reason": STEP_KINDS},
    ),
    replies=st.lists(judge_replies, min_size=8, max_size=8),
)
def test_random_scorers_keep_records_errors_and_hooks_consistent(
    kinds: dict[str, str], replies: list[Any]
) -> None:
    judge = ScriptedJudge(replies)
    scorer, built = _build_random_scorer(judge, kinds)
    with observing() as observer:
        outcome = run(scorer, output="o")
    listener = observer.only
    attempts = listener.payloads("judge_attempt_finished")
    assert judge.calls == len(attempts)

    if isinstance(outcome, sw.ScorerRunError):
        assert_documented_failure(outcome, scorer)
        assert listener.payloads("run_failed") == [outcome]
        assert "run_finished" not in listener.names()
        ran = [*outcome.completed_steps, outcome.failed_step]
        judge_records = outcome.result.judge if outcome.result is not None else None
    else:
        assert listener.payloads("run_finished") == [outcome]
        ran = built
        judge_records = outcome.judge
        assert_round_trips(outcome)
    assert ran == built[: len(ran)]
    prompt_steps_with_attempts = [
        step for step in ran if kinds[step] == "prompt" and any(a.step == step for a in attempts)
    ]
    assert list(judge_records or {}) == prompt_steps_with_attempts
    for step, record in (judge_records or {}).items():
        (execution,) = record.executions
        mine = [a for a in attempts if a.step == step]
        assert execution.attempt_count == len(mine)
        assert execution.model_call_count == sum(a.model_call_count for a in mine)
        total = sum(a.usage.total_tokens or 0 for a in mine)
        recorded = execution.usage.total_tokens if execution.usage is not None else None
        assert (recorded or 0) == total
