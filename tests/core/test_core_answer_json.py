"""Reading the judge's answer where real models put it (issue 16, item 1).

Every case is run through scorewatch with the same scripted judge bytes the reference system was
given (tests/fixtures/reference/core/judge_answers.json, recorded by
tools/reference/record_judge_answers.mjs): the value the step got and the attempts it spent must
match, except for the deliberate differences listed (and documented in docs/concepts.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import scorewatch as sw
from core_support import executions, wire
from reference_fixtures import load_reference
from scorewatch.core.answer_json import parse_json_reply
from scorewatch.judge import JudgeReply
from scorewatch.judge.errors import StructuredOutputError
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

REFERENCE = load_reference("core/judge_answers.json")
FALLBACK = '{"claims": ["from-fallback"]}'
SCORE_FALLBACK = '{"score": 0.125}'
FROM_FALLBACK = {"accepted": True, "value": {"claims": ["from-fallback"]}, "attemptCount": 2}

# Where scorewatch deliberately reads an answer differently, and what it does instead.
DELIBERATE: dict[str, dict[str, Any]] = {
    # An answer cut off mid-value is never completed into a verdict (the reference turns `tr`
    # into `true`): the attempt fails as truncated and the fallback call answers.
    "truncated_literal": FROM_FALLBACK,
    "truncated_string": FROM_FALLBACK,
    # A NaN member is dropped without losing the members after it (the reference keeps only what
    # precedes it, here nothing, and spends the fallback call).
    "nan_before_claims": {"accepted": True, "value": {"claims": ["a"]}, "attemptCount": 1},
    # json-repair reads single-quoted JSON unambiguously (the reference spends the fallback call).
    "single_quotes": {"accepted": True, "value": {"claims": ["a"]}, "attemptCount": 1},
    # A leading byte-order mark is read past (the reference spends the fallback call on it).
    "byte_order_mark": {"accepted": True, "value": {"claims": ["a"]}, "attemptCount": 1},
}
SCORE_DELIBERATE: dict[str, dict[str, Any]] = {
    "byte_order_mark_score": {"accepted": True, "value": 0.5, "attemptCount": 1},
}


class Claims(BaseModel):
    claims: list[str]
    note: str | None = None
    complete: bool | None = None
    confidence: float | None = None


def _reply(case: Any) -> Any:
    if isinstance(case, dict):
        return JudgeReply(text=case["text"], finish_reason=case["finishReason"])
    return JudgeReply(text=case, finish_reason="stop")


def _judge(case: Any, fallback: str) -> ScriptedJudge:
    return ScriptedJudge([_reply(case), fallback])


def _analyze_scorer(judge: ScriptedJudge) -> sw.Scorer:
    return (
        sw.create_scorer(
            id="answers",
            description="d",
            judge=sw.JudgeConfig(model=judge, instructions="Judge carefully."),
        )
        .analyze(
            sw.PromptStep(
                description="Extract claims",
                output_schema=Claims,
                create_prompt=lambda ctx: "List the claims.",
            )
        )
        .generate_score(lambda ctx: 1)
    )


def _score_scorer(judge: ScriptedJudge) -> sw.Scorer:
    return sw.create_scorer(
        id="answers",
        description="d",
        judge=sw.JudgeConfig(model=judge, instructions="Judge carefully."),
    ).generate_score(sw.PromptStep(description="Score it", create_prompt=lambda ctx: "Score it."))


def _without_nones(value: Any) -> Any:
    # The reference's schema leaves optional fields out; pydantic fills them with None.
    return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else value


@pytest.mark.parametrize("name", sorted(REFERENCE["cases"]["analyze"]))
async def test_analyze_answers_read_as_the_reference_reads_them(name: str) -> None:
    judge = _judge(REFERENCE["cases"]["analyze"][name], FALLBACK)
    result = await _analyze_scorer(judge).run(input="q", output="a")
    record = executions(wire(result), "analyze")[-1]
    seen = {
        "accepted": True,
        "value": _without_nones(result.analyze_step_result),
        "attemptCount": record["attemptCount"],
    }
    assert seen == DELIBERATE.get(name, REFERENCE["analyze"][name])
    assert judge.calls == seen["attemptCount"]


@pytest.mark.parametrize("name", sorted(REFERENCE["cases"]["generateScore"]))
async def test_score_answers_read_as_the_reference_reads_them(name: str) -> None:
    judge = _judge(REFERENCE["cases"]["generateScore"][name], SCORE_FALLBACK)
    result = await _score_scorer(judge).run(input="q", output="a")
    record = executions(wire(result), "generateScore")[-1]
    seen = {"accepted": True, "value": result.score, "attemptCount": record["attemptCount"]}
    expected = SCORE_DELIBERATE.get(name, REFERENCE["generateScore"][name])
    assert seen == expected
    assert type(result.score) is type(expected["value"])


def test_every_deliberate_difference_is_a_recorded_case() -> None:
    for listed, recorded in (
        (DELIBERATE, REFERENCE["analyze"]),
        (SCORE_DELIBERATE, REFERENCE["generateScore"]),
    ):
        assert set(listed) <= set(recorded)
        # Each listed case really differs from the reference (else it belongs in the plain list).
        assert all(listed[name] != recorded[name] for name in listed)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"score": 07}', "json-repair reads 7: a changed score"),
        ('{"score": -07}', "a signed leading zero"),
        ('{"score": .5}', "no digit before the point"),
        ('{"score": +0.5}', "a plus sign"),
        ('{"score": 5.}', "no digit after the point"),
        ('{"score": 0x1F}', "hexadecimal"),
        ("{\u201cscore\u201d: 0.5}", "curly quotes as delimiters"),
        ("{'score': 07}", "single quotes do not excuse the number"),
    ],
)
def test_what_json_does_not_have_is_never_mended(text: str, why: str) -> None:
    with pytest.raises(StructuredOutputError) as caught:
        parse_json_reply(text, "stop")
    assert caught.value.code == "STRUCTURED_OUTPUT_JSON_PARSE_FAILED", why


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"claims": ["07", ".5", "\u201cq\u201d"], "n": 1e-3,}',
            {"claims": ["07", ".5", "\u201cq\u201d"], "n": 0.001},
        ),
        ("{'claims': ['it is 07'],}", {"claims": ["it is 07"]}),
        ('\ufeff  {"score": 0.5}', {"score": 0.5}),
        ('Score: {"score": 0.5} and \\{x\\}', {"score": 0.5}),
    ],
)
def test_strings_and_marks_around_json_are_not_mistaken(text: str, expected: Any) -> None:
    assert parse_json_reply(text, "stop") == expected


class Typed(BaseModel):
    count: int
    weight: float
    ok: bool


@pytest.mark.parametrize(
    ("answer", "accepted"),
    [
        ('{"count": 2, "weight": 1, "ok": true}', {"count": 2, "weight": 1.0, "ok": True}),
        ('{"count": 2.0, "weight": 0.5, "ok": false}', {"count": 2, "weight": 0.5, "ok": False}),
        ('{"count": "2", "weight": 0.5, "ok": false}', None),
        ('{"count": 2, "weight": "0.5", "ok": false}', None),
        ('{"count": 2, "weight": 0.5, "ok": "false"}', None),
        ('{"count": 2, "weight": 0.5, "ok": 0}', None),
    ],
)
async def test_a_pydantic_schema_is_checked_strictly(answer: str, accepted: Any) -> None:
    fallback = '{"count": 9, "weight": 9, "ok": true}'
    judge = ScriptedJudge([answer, fallback])
    scorer = (
        sw.create_scorer(
            id="typed", description="d", judge=sw.JudgeConfig(model=judge, instructions="i")
        )
        .analyze(sw.PromptStep(description="d", output_schema=Typed, create_prompt=lambda c: "p"))
        .generate_score(lambda ctx: 1)
    )
    result = await scorer.run(output="a")
    if accepted is None:
        assert result.analyze_step_result == {"count": 9, "weight": 9.0, "ok": True}
        assert judge.calls == 2
    else:
        assert result.analyze_step_result == accepted
        assert judge.calls == 1


@pytest.mark.parametrize(
    ("text", "finish_reason"),
    [
        ('{"verdict": "tr', "stop"),
        ('{"claims": ["a", "b', "stop"),
        ('Here you go: {"claims": ["a"', "stop"),
        ('{"score": 1}', "length"),
    ],
)
def test_a_cut_off_answer_is_a_failure_that_says_so(text: str, finish_reason: str) -> None:
    with pytest.raises(StructuredOutputError) as caught:
        parse_json_reply(text, finish_reason)
    assert caught.value.code == "STRUCTURED_OUTPUT_TRUNCATED"
    assert "cut off" in caught.value.message and "not repaired" in caught.value.message


async def test_a_truncated_attempt_is_recorded_as_such() -> None:
    judge = ScriptedJudge([JudgeReply(text='{"claims": ["a", "tr', finish_reason="stop"), FALLBACK])
    result = await _analyze_scorer(judge).run(output="a")
    assert result.analyze_step_result["claims"] == ["from-fallback"]
    assert judge.requests[1].fallback is True


@pytest.mark.parametrize(
    "text",
    [
        '{"score": 0.7 or maybe 0.8}',  # json-repair would guess 0.7: a guess is not an answer
        "{verdict: yes}",
        "no json here",
        "NaN",
        "-Infinity",
    ],
)
def test_guesses_are_not_answers(text: str) -> None:
    with pytest.raises(StructuredOutputError) as caught:
        parse_json_reply(text, "stop")
    assert caught.value.code == "STRUCTURED_OUTPUT_JSON_PARSE_FAILED"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "quote \\" and brace }", "b": [1, {"c": 2}]} trailing', None),
        ('prose {"a": "escaped \\\\"} more', {"a": "escaped \\"}),
        ('<|channel|>final<|message|>{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2,]}\n```\nDone.', {"a": [1, 2]}),
        ('[{"a": 1}] and more', [{"a": 1}]),
        ('{"a": [1, NaN, 2]}', {"a": [1, 2]}),
    ],
)
def test_extraction_edges(text: str, expected: Any) -> None:
    if expected is None:
        expected = {"a": 'quote " and brace }', "b": [1, {"c": 2}]}
    assert parse_json_reply(text, "stop") == expected


async def test_a_long_answer_is_searched_off_the_event_loop_with_the_same_result() -> None:
    claims = [f"claim number {i} " + "x" * 40 for i in range(60)]
    body = '{"claims": [' + ", ".join(f'"{c}"' for c in claims) + ",]}"  # a trailing comma
    answer = "Here is my analysis.\n```json\n" + body + "\n```\nHope that helps."
    assert len(answer) > 2_048  # past the on-loop limit
    judge = ScriptedJudge([answer])
    result = await _analyze_scorer(judge).run(output="a")
    assert result.analyze_step_result["claims"] == claims
    assert judge.calls == 1
    cut = ScriptedJudge(['{"claims": ["' + "y" * 3000, FALLBACK])
    assert (await _analyze_scorer(cut).run(output="a")).analyze_step_result["claims"] == [
        "from-fallback"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "x" + "{" * 30_000 + "}" * 30_000,  # deep nesting: json-repair would take minutes
        "{" * 100_000 + "}" * 100_000,
        '{"a": ' * 40 + "1," + "}" * 40,  # a slip json-repair could mend, but nested too deep
        "prose " * 20_000 + '{"claims": []}',  # too long to search
    ],
)
def test_hostile_answers_fail_as_not_json(text: str) -> None:
    with pytest.raises(StructuredOutputError) as caught:
        parse_json_reply(text, "stop")
    assert caught.value.code == "STRUCTURED_OUTPUT_JSON_PARSE_FAILED"
