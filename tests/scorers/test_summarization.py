"""The summarization scorer (claims, questions, coverage, weaker axis) with a scripted judge."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest

import scorewatch as sw
from scorer_runs import (
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
)
from scorewatch.judge.protocol import JudgeRequest
from scorewatch.scorers import create_summarization_scorer
from scorewatch.scorers._summarization_prompts import SUMMARIZATION_INSTRUCTIONS
from scorewatch.scorers.summarization import measure_axes
from scorewatch.scorers.utils import extract_tool_results
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.integration

SOURCE = (
    "The company was founded in 1995 by John Smith. It started with 10 employees and grew to 500 "
    "by 2020. The company is based in Seattle."
)
PREPROCESS_MARKER = "Part 1 (alignment)"
ANALYZE_MARKER = "Decide whether each question can be answered"
REASON_MARKER = "Explain the summarization score"
MARKERS = {
    "preprocess": PREPROCESS_MARKER,
    "analyze": ANALYZE_MARKER,
    "generate_reason": REASON_MARKER,
}


def verdicts(claims: Sequence[str], flags: Sequence[bool]) -> list[dict[str, Any]]:
    return [
        {"claim": claim, "supported": flag, "reason": "test verdict"}
        for claim, flag in zip(claims, flags, strict=True)
    ]


def answers(questions: Sequence[str], flags: Sequence[bool]) -> list[dict[str, Any]]:
    return [
        {"question": question, "answered": flag, "reason": "test verdict"}
        for question, flag in zip(questions, flags, strict=True)
    ]


def judge(
    *,
    alignment: list[dict[str, Any]] | None = None,
    questions: list[str] | None = None,
    coverage: list[dict[str, Any]] | None = None,
    reason: str = "No reason provided.",
) -> ScriptedJudge:
    """A judge that answers each step by `request.step`, checking the step's routing marker."""
    replies = {
        "preprocess": json.dumps({"alignment": alignment or [], "questions": questions or []}),
        "analyze": json.dumps({"coverage": coverage or []}),
        "generate_reason": reason,
    }

    def reply(request: JudgeRequest) -> str:
        for step, marker in MARKERS.items():
            assert (marker in request.prompt) == (step == request.step), (step, request.step)
        return replies[request.step]

    return ScriptedJudge(reply)


def prompt_of(model: ScriptedJudge, step: str) -> str:
    prompts = [request.prompt for request in model.requests if request.step == step]
    assert len(prompts) == 1, f"expected one {step} call, got {len(prompts)}"
    return prompts[0]


def all_prompts(model: ScriptedJudge) -> str:
    return "\n".join(request.prompt for request in model.requests)


def agent_run(summary: str, source: str = SOURCE) -> dict[str, Any]:
    return create_agent_test_run(
        input_messages=[create_test_message(source, "user", id="u1")],
        output=[create_test_message(summary, "assistant", id="a1")],
    )


def run_with_tool_call(summary: str, source: str = SOURCE) -> dict[str, Any]:
    return create_agent_test_run(
        input_messages=[create_test_message("Summarize the document", "user", id="u1")],
        output=[
            create_test_message(
                "",
                "assistant",
                id="a1",
                tool_invocations=[
                    create_tool_invocation(
                        tool_call_id="call-1",
                        tool_name="fetchDocument",
                        args={},
                        result={"text": source},
                    )
                ],
            ),
            create_test_message(summary, "assistant", id="a2"),
        ],
    )


# ---------------------------------------------------------------------------- configuration


def test_configuration() -> None:
    scorer = create_summarization_scorer(judge())
    assert scorer.id == "summarization-scorer"
    assert scorer.name == "Summarization Scorer"
    assert scorer.description == (
        "A scorer that evaluates whether a summary stays faithful to its source text and "
        "preserves the information the source states"
    )
    assert scorer.scale == 1
    assert scorer.direction == "higher_is_better"
    assert scorer.type == "agent"
    assert scorer.judge is not None
    assert scorer.judge.instructions == SUMMARIZATION_INSTRUCTIONS
    assert [(s["name"], s["type"]) for s in scorer.get_steps()] == [
        ("preprocess", "prompt"),
        ("analyze", "prompt"),
        ("generate_score", "function"),
        ("generate_reason", "prompt"),
    ]
    assert create_summarization_scorer(judge(), scale=10).scale == 10


@pytest.mark.parametrize("bad", [0, -3])
def test_max_questions_below_one_raises_at_construction(bad: int) -> None:
    message = "maxQuestions must be at least 1 for Summarization scoring"
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        create_summarization_scorer(judge(), max_questions=bad)
    assert f"max_questions={bad}" in str(caught.value)


def test_max_questions_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="max_questions"):
        create_summarization_scorer(judge(), max_questions=2.5)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ the score formula


@pytest.mark.parametrize(
    ("supported", "answered", "scale", "expected"),
    [
        ([True, True], [True, True], 1, 1.0),
        ([True, False], [True, True], 1, 0.5),  # alignment is the weaker axis
        ([True], [False, True, False, False], 1, 0.25),  # coverage is the weaker axis
        ([False], [True], 1, 0.0),
        ([True, True, False], [True, True], 1, 0.67),
        ([True, False], [True, True], 10, 5.0),
    ],
)
async def test_score_is_the_weaker_axis_times_scale(
    supported: list[bool], answered: list[bool], scale: float, expected: float
) -> None:
    claims = [f"Claim {i}" for i in range(len(supported))]
    questions = [f"Question {i}?" for i in range(len(answered))]
    model = judge(
        alignment=verdicts(claims, supported),
        questions=questions,
        coverage=answers(questions, answered),
    )
    scorer = create_summarization_scorer(model, scale=scale)
    result = await scorer.run(**agent_run("A summary of the company."))
    assert result.score == expected
    assert model.calls == 3


# ------------------------------------------------------------------------------- the reason


async def test_reason_is_the_judge_text_verbatim() -> None:
    text = "  The score is 0 because coverage was the weaker axis.\n"
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [False]),
        reason=text,
    )
    result = await create_summarization_scorer(model).run(**agent_run("A summary."))
    assert result.reason == text
    assert result.score == 0


# ------------------------------------------------------------------------- the worked example


async def test_worked_example_two_of_three_claims_three_of_five_questions() -> None:
    claims = ["Founded in 1995", "Founded by John Smith", "Based in Portland"]
    questions = [
        "Was the company founded in 1995?",
        "Was it founded by John Smith?",
        "Did it start with 10 employees?",
        "Did it grow to 500 employees by 2020?",
        "Is it based in Seattle?",
    ]
    reason = (
        "The score is 0.6 because coverage decided it: the summary omits the company's headcount "
        "history (10 employees at the start, 500 by 2020)."
    )
    model = judge(
        alignment=verdicts(claims, [True, True, False]),
        questions=questions,
        coverage=answers(questions, [True, True, False, False, True]),
        reason=reason,
    )
    summary = "John Smith founded the company in 1995; it is based in Portland."
    result = await create_summarization_scorer(model).run(**agent_run(summary))

    assert result.score == 0.6
    assert result.reason == reason
    assert model.calls == 3
    assert result.judge is not None
    assert list(result.judge) == ["preprocess", "analyze", "generate_reason"]
    for step, record in result.judge.items():
        assert len(record.executions) == 1, step
        assert record.executions[0].status == "success"
    dumped = result.model_dump(mode="json", by_alias=True)
    assert list(dumped["judge"]) == ["preprocess", "analyze", "generateReason"]
    assert dumped["judge"]["analyze"]["executions"][0]["judgeModelId"] == "scripted-judge"

    assert result.analyze_prompt is not None
    assert SOURCE not in result.analyze_prompt
    assert "founded in 1995 by John Smith" not in result.analyze_prompt
    assert result.analyze_prompt == prompt_of(model, "analyze")
    assert summary in result.analyze_prompt
    assert result.preprocess_step_result == {
        "alignment": verdicts(claims, [True, True, False]),
        "questions": questions,
    }
    assert result.analyze_step_result == {
        "coverage": answers(questions, [True, True, False, False, True])
    }
    reason_prompt = prompt_of(model, "generate_reason")
    assert "Score: 0.6 out of 1" in reason_prompt
    assert "Alignment score: 0.67" in reason_prompt
    assert "Coverage score: 0.6" in reason_prompt
    assert "- Based in Portland" in reason_prompt
    assert "- Did it start with 10 employees?" in reason_prompt
    assert "- Did it grow to 500 employees by 2020?" in reason_prompt
    assert result.generate_score_prompt is None
    for request in model.requests:
        assert request.instructions == SUMMARIZATION_INSTRUCTIONS


# ---------------------------------------------------------------------- the coverage prompt


async def test_coverage_prompt_never_contains_the_source() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Does the document mention volcanoes?"],
        coverage=answers(["Question A"], [True]),
    )
    await create_summarization_scorer(model).run(
        **agent_run("A summary.", "The source document mentions volcanoes.")
    )
    analyze = prompt_of(model, "analyze")
    assert "The source document mentions volcanoes." not in analyze
    assert "[0] Does the document mention volcanoes?" in analyze
    assert "Number of questions: 1" in analyze
    assert "The number of verdicts MUST MATCH the number of questions exactly" in analyze
    assert "The source document mentions volcanoes." in prompt_of(model, "preprocess")


# ---------------------------------------------------------------- which text is the summary


async def test_summary_is_the_last_non_empty_assistant_text() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )
    result = await create_summarization_scorer(model).run(
        **run_with_tool_call("The company is based in Seattle.")
    )
    assert result.score == 1
    assert "Summary:\nThe company is based in Seattle.\n" in prompt_of(model, "preprocess")
    assert "Summary:\nThe company is based in Seattle.\n" in prompt_of(model, "analyze")


async def test_summary_from_openai_messages_with_a_tool_turn() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )
    output = [
        {"role": "assistant", "content": "Draft that was replaced."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "tool output"},
        {"role": "assistant", "content": [{"type": "text", "text": "Final summary."}]},
        {"role": "assistant", "content": "   "},
    ]
    run_input = {"messages": [{"role": "user", "content": [{"type": "text", "text": SOURCE}]}]}
    result = await create_summarization_scorer(model).run(input=run_input, output=output)
    assert result.score == 1
    preprocess = prompt_of(model, "preprocess")
    assert f"Source Text:\n{SOURCE}\n" in preprocess
    assert "Summary:\nFinal summary.\n" in preprocess
    assert "Draft that was replaced." not in all_prompts(model)


# -------------------------------------------------------------- where the source comes from


async def test_source_option_overrides_the_run_input() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )
    scorer = create_summarization_scorer(
        model, source="An entirely different source document about penguins."
    )
    await scorer.run(**agent_run("A summary.", "A run input document about volcanoes."))
    assert "penguins" in all_prompts(model)
    assert "volcanoes" not in all_prompts(model)


async def test_source_extractor_overrides_source() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )
    seen: list[tuple[Any, Any]] = []

    def extractor(run_input: Any, output: Any) -> str:
        seen.append((run_input, output))
        return "Extracted source document about penguins."

    scorer = create_summarization_scorer(
        model, source="Ignored because the extractor takes precedence.", source_extractor=extractor
    )
    run = agent_run("A summary.")
    result = await scorer.run(**run)
    assert result.score == 1
    assert "Extracted source document about penguins." in prompt_of(model, "preprocess")
    assert "Ignored because" not in all_prompts(model)
    assert seen == [(run["input"], run["output"])]


async def test_source_extractor_reading_a_tool_result() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )

    def fetched_documents(_input: Any, output: Any) -> str:
        return "\n\n".join(
            str(found.result["text"])
            for found in extract_tool_results(output)
            if found.tool_name == "fetchDocument"
        )

    scorer = create_summarization_scorer(model, source_extractor=fetched_documents)
    await scorer.run(**run_with_tool_call("Seattle company.", "A fetched doc about otters."))
    assert "Source Text:\nA fetched doc about otters.\n" in prompt_of(model, "preprocess")
    assert "otters" not in prompt_of(model, "analyze")


async def test_async_source_extractor_runs_for_plain_runs_too() -> None:
    # The reference system skips the extractor unless the run is agent-shaped; we do not.
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )

    async def extractor(_input: Any, _output: Any) -> str:
        return "Async source about glaciers."

    scorer = create_summarization_scorer(model, source_extractor=extractor)
    await scorer.run(input="plain input", output="plain summary")
    preprocess = prompt_of(model, "preprocess")
    assert "Source Text:\nAsync source about glaciers.\n" in preprocess
    assert "Summary:\nplain summary\n" in preprocess


async def test_empty_source_option_is_kept() -> None:
    model = judge(alignment=verdicts(["Claim A"], [True]))
    await create_summarization_scorer(model, source="").run(**agent_run("A summary."))
    assert "Source Text:\n\n" in prompt_of(model, "preprocess")
    assert SOURCE not in all_prompts(model)


# ---------------------------------------------------------------- empty claims or questions


async def test_no_claims_scores_zero_and_still_explains() -> None:
    model = judge(
        alignment=[],
        questions=["Was the company founded in 1995?"],
        coverage=answers(["Was the company founded in 1995?"], [True]),
        reason="The score is 0 because the summary makes no claims.",
    )
    result = await create_summarization_scorer(model).run(**agent_run(""))
    assert result.score == 0
    assert result.reason == "The score is 0 because the summary makes no claims."
    assert [r.step for r in model.requests] == ["preprocess", "analyze", "generate_reason"]
    assert "made no claims" in prompt_of(model, "generate_reason")


async def test_no_questions_scores_zero_with_three_calls() -> None:
    model = judge(alignment=verdicts(["Claim A"], [True]), questions=[], coverage=[])
    result = await create_summarization_scorer(model).run(**agent_run("A summary.", ""))
    assert result.score == 0
    assert [r.step for r in model.requests] == ["preprocess", "analyze", "generate_reason"]
    analyze = prompt_of(model, "analyze")
    assert "Number of questions: 0" in analyze
    assert "(none)" in analyze
    reason_prompt = prompt_of(model, "generate_reason")
    assert "Score: 0 out of 1" in reason_prompt
    assert "no questions" in reason_prompt


async def test_empty_summary_and_empty_source_score_zero_with_a_reason() -> None:
    model = judge(reason="The score is 0 because there was nothing to compare.")
    result = await create_summarization_scorer(model).run(
        input="", output=[create_test_message("", "assistant", id="a")]
    )
    assert result.score == 0
    assert result.reason == "The score is 0 because there was nothing to compare."
    assert model.calls == 3
    preprocess = prompt_of(model, "preprocess")
    assert preprocess.endswith("Source Text:\n\n\nSummary:\n\n\nJSON:\n")


async def test_missing_output_and_input_do_not_crash() -> None:
    model = judge(reason="Nothing to score.")
    result = await create_summarization_scorer(model).run(input=None, output=None)
    assert result.score == 0
    assert result.reason == "Nothing to score."


# ------------------------------------------------------------------------- too few verdicts


async def test_missing_coverage_verdicts_count_as_unanswered() -> None:
    questions = ["Question A", "Question B", "Question C", "Question D"]
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=questions,
        coverage=answers(["Question A"], [True]),
    )
    result = await create_summarization_scorer(model).run(**agent_run("A summary."))
    assert result.score == 0.25
    reason_prompt = prompt_of(model, "generate_reason")
    assert "Coverage score: 0.25" in reason_prompt
    missing_block = reason_prompt.split("Unanswered questions:\n", 1)[1].split("\n\n", 1)[0]
    assert missing_block.splitlines() == ["- Question B", "- Question C", "- Question D"]


async def test_verdicts_match_questions_by_position_not_text() -> None:
    questions = ["Question A", "Question B"]
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=questions,
        # Reworded echoes still count for the question at the same position.
        coverage=answers(["Reworded A", "Reworded B"], [True, False]),
    )
    result = await create_summarization_scorer(model).run(**agent_run("A summary."))
    assert result.score == 0.5


# ------------------------------------------------------------------------ too many verdicts


async def test_extra_coverage_verdicts_are_ignored() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A", "Question B", "Question C"], [True, False, False]),
    )
    result = await create_summarization_scorer(model).run(**agent_run("A summary."))
    assert result.score == 1


# ------------------------------------------------------------------------- the question cap


async def test_questions_beyond_the_default_cap_are_ignored_and_not_sent() -> None:
    questions = [f"Question {i}?" for i in range(14)]
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=questions,
        coverage=answers(questions, [i < 10 for i in range(14)]),
    )
    result = await create_summarization_scorer(model).run(**agent_run("A summary."))
    assert result.score == 1
    analyze = prompt_of(model, "analyze")
    assert "Number of questions: 10" in analyze
    assert "[9] Question 9?" in analyze
    assert "Question 10?" not in analyze
    assert "Question 13?" not in analyze
    assert "at most 10 closed" in prompt_of(model, "preprocess")
    # The stored step result keeps what the judge returned.
    assert result.preprocess_step_result["questions"] == questions


async def test_questions_beyond_max_questions_are_ignored() -> None:
    questions = ["Question A", "Question B", "Question C"]
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=questions,
        coverage=answers(questions, [True, False, False]),
    )
    result = await create_summarization_scorer(model, max_questions=1).run(
        **agent_run("A summary.")
    )
    assert result.score == 1
    analyze = prompt_of(model, "analyze")
    assert "Number of questions: 1" in analyze
    assert "Question B" not in analyze
    assert "at most 1 closed" in prompt_of(model, "preprocess")
    assert "Unanswered questions:\n- none" in prompt_of(model, "generate_reason")


# ------------------------------------------------------------------------ the reason prompt


async def test_reason_prompt_quotes_scores_with_js_number_formatting() -> None:
    claims = ["Claim A", "Claim B", "Claim C"]
    model = judge(
        alignment=verdicts(claims, [True, True, False]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )
    await create_summarization_scorer(model).run(**agent_run("A summary."))
    reason_prompt = prompt_of(model, "generate_reason")
    assert "Score: 0.67 out of 1\n" in reason_prompt
    assert "Alignment score: 0.67 " in reason_prompt
    assert "Coverage score: 1 " in reason_prompt
    assert "Unsupported claims:\n- Claim C\n" in reason_prompt
    assert 'Format: "The score is 0.67 because {explanation}"' in reason_prompt
    assert "1.0" not in reason_prompt


async def test_reason_prompt_with_a_scale() -> None:
    model = judge(
        alignment=verdicts(["Claim A", "Claim B"], [True, False]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )
    result = await create_summarization_scorer(model, scale=10).run(**agent_run("A summary."))
    assert result.score == 5
    reason_prompt = prompt_of(model, "generate_reason")
    assert "Score: 5 out of 10\n" in reason_prompt
    assert "Alignment score: 0.5 " in reason_prompt
    assert "5.0" not in reason_prompt


# --------------------------------------------------------------------------- long sources


async def test_a_50000_word_source_keeps_exactly_three_calls() -> None:
    words = [f"word{i % 977}" for i in range(50_000)]
    source = " ".join(words)
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
    )
    result = await create_summarization_scorer(model).run(input=source, output="Short summary.")
    assert model.calls == 3
    assert result.score == 1
    assert source in prompt_of(model, "preprocess")
    assert source[:200] not in prompt_of(model, "analyze")
    assert source[:200] not in prompt_of(model, "generate_reason")


# ----------------------------------------------------------------------- judge conversation


async def test_structured_steps_send_a_strict_schema_and_accept_a_missing_reason() -> None:
    def reply(request: JudgeRequest) -> str:
        if request.step == "preprocess":
            return json.dumps(
                {"alignment": [{"claim": "c", "supported": True}], "questions": ["q"], "x": 1}
            )
        if request.step == "analyze":
            return json.dumps({"coverage": [{"question": "q", "answered": True}]})
        return "ok"

    model = ScriptedJudge(reply)
    result = await create_summarization_scorer(model).run(input=SOURCE, output="A summary.")
    assert result.score == 1
    assert model.calls == 3  # no structured-output fallback was needed
    # The step result is what the judge answered (as the reference's): no invented reason.
    assert result.preprocess_step_result == {
        "alignment": [{"claim": "c", "supported": True}],
        "questions": ["q"],
    }
    schemas = {r.step: r.schema for r in model.requests}
    assert schemas["generate_reason"] is None
    preprocess_schema = schemas["preprocess"]
    assert preprocess_schema is not None
    assert preprocess_schema["required"] == ["alignment", "questions"]
    assert preprocess_schema["additionalProperties"] is False
    claim_schema = preprocess_schema["$defs"]["ClaimVerdict"]
    assert claim_schema["required"] == ["claim", "supported", "reason"]
    assert "default" not in json.dumps(preprocess_schema)
    assert "title" not in json.dumps(preprocess_schema)


async def test_a_malformed_preprocess_reply_fails_the_run_after_one_fallback() -> None:
    replies = iter(['{"alignment": "nope"}', "still not json"])
    model = ScriptedJudge(lambda request: next(replies))
    with pytest.raises(sw.ScorerRunError) as caught:
        await create_summarization_scorer(model).run(input=SOURCE, output="A summary.")
    assert caught.value.failed_step == "preprocess"
    assert model.calls == 2
    assert model.requests[1].fallback is True


def test_run_sync() -> None:
    model = judge(
        alignment=verdicts(["Claim A"], [True]),
        questions=["Question A"],
        coverage=answers(["Question A"], [True]),
        reason="The score is 1 because it is faithful and complete.",
    )
    result = create_summarization_scorer(model).run_sync(input=SOURCE, output="A summary.")
    assert result.score == 1
    assert result.reason == "The score is 1 because it is faithful and complete."


# ---------------------------------------------------------------------------- measure_axes


def test_measure_axes_edge_cases() -> None:
    measures = measure_axes(questions=[], alignment=[], coverage=[], max_questions=10)
    assert (measures.alignment_score, measures.coverage_score) == (0, 0)
    assert not measures.is_scorable

    measures = measure_axes(
        questions=["a", "b", "c"],
        alignment=[{"claim": "x", "supported": True}, {"claim": "y", "supported": "yes"}],
        coverage=[{"answered": True}, "garbage", {"answered": True}, {"answered": True}],
        max_questions=2,
    )
    # Only a literal True counts; a non-dict verdict is unanswered; "c" is beyond the cap.
    assert measures.alignment_score == 0.5
    assert measures.unsupported_claims == ["y"]
    assert measures.coverage_score == 0.5
    assert measures.missing_questions == ["b"]
    assert measures.question_count == 2
    assert measures.is_scorable


# ---------------------------------------------------------------------------- prompt budget


async def test_three_calls_stay_under_ten_thousand_characters_for_a_400_word_source() -> None:
    # Budget check (characters, not time): instructions + prompt + schema over the three calls.
    sentence = "Northwind Logistics opened a depot in Antwerp in 2015 with 140 vehicles in total. "
    source = " ".join((sentence * 30).split()[:400])
    summary = "Northwind, a Dutch logistics firm, " + "grew its fleet and revenue steadily " * 8
    questions = [f"Did Northwind open depot number {i} in Antwerp in 2015?" for i in range(10)]
    model = judge(
        alignment=verdicts([f"Northwind claim number {i}" for i in range(8)], [True] * 8),
        questions=questions,
        coverage=answers(questions, [True] * 7 + [False] * 3),
        reason="The score is 0.7 because coverage decided it.",
    )
    await create_summarization_scorer(model).run(input=source, output=summary)
    sent = sum(
        len(r.instructions) + len(r.prompt) + len(json.dumps(r.schema or "", separators=(",", ":")))
        for r in model.requests
    )
    assert len(source.split()) == 400
    assert sent <= 10_000, sent


# ------------------------------------------------------------- real litellm, loopback judge


async def test_end_to_end_through_litellm_against_a_loopback_judge() -> None:
    from scorewatch.testing import LoopbackJudgeServer

    questions = [f"Question {i}?" for i in range(5)]
    replies = {
        PREPROCESS_MARKER: json.dumps(
            {
                "alignment": verdicts(["A", "B", "C"], [True, True, False]),
                "questions": questions,
            }
        ),
        ANALYZE_MARKER: json.dumps(
            {"coverage": answers(questions, [True, True, False, False, True])}
        ),
        REASON_MARKER: "The score is 0.6 because coverage decided it.",
    }

    def route(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        return next(text for marker, text in replies.items() if marker in prompt)

    with LoopbackJudgeServer(route) as server:
        scorer = create_summarization_scorer(
            "openai/loopback-judge",
            model_options={"api_base": server.base_url, "api_key": "sk-loopback"},
        )
        result = await scorer.run(input=SOURCE, output="Founded in 1995 in Seattle.")
        received = server.requests

    assert result.score == 0.6
    assert result.reason == "The score is 0.6 because coverage decided it."
    assert len(received) == 3
    assert received[0].messages[0]["role"] == "system"
    assert SUMMARIZATION_INSTRUCTIONS in received[0].messages[0]["content"]
    analyze_body = json.dumps(received[1].body)
    assert ANALYZE_MARKER in analyze_body
    assert "founded in 1995 by John Smith" not in analyze_body
    assert result.judge is not None
    execution = result.judge["preprocess"].executions[0]
    assert execution.status == "success"
    assert "sk-loopback" not in result.model_dump_json()
