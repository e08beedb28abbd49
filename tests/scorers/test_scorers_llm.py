"""LLM-judged prebuilt scorers on scripted verdicts: the score formulas, empty cases, direction,
configuration, input shapes and the exact number of judge calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

import scorewatch as sw
from scorer_runs import (
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
)
from scorewatch.judge.protocol import JudgeRequest
from scorewatch.scorers.answer_relevancy import create_answer_relevancy_scorer
from scorewatch.scorers.answer_similarity import create_answer_similarity_scorer
from scorewatch.scorers.bias import create_bias_scorer
from scorewatch.scorers.context_precision import (
    context_precision_score,
    create_context_precision_scorer,
)
from scorewatch.scorers.context_recall import create_context_recall_scorer
from scorewatch.scorers.context_relevance import create_context_relevance_scorer
from scorewatch.scorers.faithfulness import create_faithfulness_scorer
from scorewatch.scorers.hallucination import create_hallucination_scorer
from scorewatch.scorers.noise_sensitivity import create_noise_sensitivity_scorer
from scorewatch.scorers.prompt_alignment import create_prompt_alignment_scorer
from scorewatch.scorers.rubric import create_rubric_scorer
from scorewatch.scorers.rubric_label import create_rubric_label_scorer
from scorewatch.scorers.tool_call_accuracy_llm import (
    create_tool_call_accuracy_llm_scorer,
    describe_tools,
)
from scorewatch.scorers.toxicity import create_toxicity_scorer
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

REASON = "The score is what it is because of the verdicts."


def routed(**answers: Any) -> ScriptedJudge:
    """A judge answering by step name; dict/list answers are sent as JSON text."""

    def reply(request: JudgeRequest) -> str:
        answer = answers.get(request.step, REASON)
        return answer if isinstance(answer, str) else json.dumps(answer)

    return ScriptedJudge(reply)


def verdicts(*labels: str) -> dict[str, Any]:
    return {"verdicts": [{"verdict": v, "reason": "r"} for v in labels]}


def results(*labels: str) -> dict[str, Any]:
    """The answer-relevancy and bias verdict shape (the reference system's `results`)."""
    return {"results": [{"result": v, "reason": "r"} for v in labels]}


def prompt_of(judge: ScriptedJudge, step: str) -> str:
    return next(r.prompt for r in judge.requests if r.step == step)


async def test_faithfulness_formula_calls_and_direction() -> None:
    judge = routed(
        preprocess={"claims": ["a", "b", "c", "d"]},
        analyze=verdicts("yes", " Yes", "unsure", "no"),
    )
    scorer = create_faithfulness_scorer(judge, context=["The sky is blue."], scale=2)
    assert (scorer.id, scorer.direction, scorer.scale) == (
        "faithfulness-scorer",
        "higher_is_better",
        2,
    )
    result = await scorer.run(input="q", output="The sky is blue.")
    assert result.score == 1.0  # 2 of 4 supported, times scale 2
    assert result.reason == REASON
    assert judge.calls == 3
    assert set(result.judge or {}) == {"preprocess", "analyze", "generate_reason"}
    assert "[0] The sky is blue." in prompt_of(judge, "analyze")
    assert "Judge each claim against the context" in prompt_of(judge, "analyze")
    assert "- c (unsure)" in prompt_of(judge, "generate_reason")
    assert result.analyze_step_result == verdicts("yes", " Yes", "unsure", "no")


async def test_faithfulness_denominator_is_the_verdicts_and_no_claims_is_zero() -> None:
    # The reference system divides by the verdicts the judge returned, not by the claims.
    judge = routed(preprocess={"claims": ["a", "b", "c"]}, analyze=verdicts("yes"))
    result = await create_faithfulness_scorer(judge, context=["x"]).run(input="q", output="o")
    assert result.score == 1
    empty = routed(preprocess={"claims": []}, analyze={"verdicts": []})
    result = await create_faithfulness_scorer(empty, context=["x"]).run(input="q", output="Hi!")
    assert result.score == 0.0
    assert empty.calls == 3
    assert "no factual claims" in prompt_of(empty, "generate_reason")


async def test_faithfulness_context_sources() -> None:
    async def extractor(run_input: Any, output: Any) -> list[str]:
        return ["from the extractor", "  "]

    judge = routed(preprocess={"claims": ["a"]}, analyze=verdicts("yes"))
    await create_faithfulness_scorer(judge, context_extractor=extractor).run(input="q", output="o")
    analyze = prompt_of(judge, "analyze")
    # A blank piece keeps its place and number, as the reference keeps it (issue 30, item 12).
    assert "[0] from the extractor\n[1]   \n" in analyze.split("Claims:")[0]

    # No context option: the agent's tool results are the context.
    tools = [create_tool_invocation(tool_call_id="t1", tool_name="weather", result={"temp": 21})]
    run = create_agent_test_run(
        input_messages=[create_test_message("Weather?", "user")],
        output=[create_test_message("It is 21 degrees.", "assistant", tool_invocations=tools)],
    )
    judge = routed(preprocess={"claims": ["It is 21 degrees"]}, analyze=verdicts("yes"))
    result = await create_faithfulness_scorer(judge).run(**run)
    assert result.score == 1.0
    assert '[0] weather: {"temp":21}' in prompt_of(judge, "analyze")
    assert "It is 21 degrees." in prompt_of(judge, "preprocess")


async def test_hallucination_is_lower_is_better() -> None:
    judge = routed(preprocess={"claims": ["a", "b", "c"]}, analyze=verdicts("yes", "no", "no"))
    scorer = create_hallucination_scorer(judge, context=["ctx"])
    assert scorer.direction == "lower_is_better"
    result = await scorer.run(input="q", output="o")
    assert result.score == 0.33
    assert judge.calls == 3
    assert "Find the hallucinated claims" in prompt_of(judge, "analyze")
    empty = routed(preprocess={"claims": []}, analyze={"verdicts": []})
    assert (await create_hallucination_scorer(empty, context=["c"]).run(output="o")).score == 0.0


async def test_answer_relevancy_weights_unsure() -> None:
    answers = {
        "preprocess": {"statements": ["a", "b", "c"]},
        "analyze": results("yes", "unsure", "no"),
    }
    judge = routed(**answers)
    result = await create_answer_relevancy_scorer(judge).run(input="q", output="o")
    assert result.score == 0.43  # (1 + 0.3) / 3
    assert judge.calls == 3
    half = await create_answer_relevancy_scorer(routed(**answers), uncertainty_weight=0.5).run(
        input="q", output="o"
    )
    assert half.score == 0.5
    empty = routed(preprocess={"statements": []}, analyze=results())
    assert (await create_answer_relevancy_scorer(empty).run(input="q", output="")).score == 0
    with pytest.raises(ValueError, match="uncertainty_weight"):
        create_answer_relevancy_scorer(judge, uncertainty_weight=2)
    with pytest.raises(ValueError, match="scale"):
        create_answer_relevancy_scorer(judge, scale=0)


async def test_answer_relevancy_reads_openai_and_agent_shapes() -> None:
    openai_input = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Capital of France?"},
    ]
    openai_output = [
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "assistant", "content": [{"type": "text", "text": "Paris."}]},
    ]
    agent = create_agent_test_run(
        input_messages=[create_test_message("Capital of France?", "user")],
        output=[create_test_message("Paris.", "assistant")],
    )
    for run in ({"input": openai_input, "output": openai_output}, agent):
        judge = routed(preprocess={"statements": ["Paris."]}, analyze=results("yes"))
        result = await create_answer_relevancy_scorer(judge).run(**run)
        assert result.score == 1.0
        assert "Paris." in prompt_of(judge, "preprocess")
        assert "Capital of France?" in prompt_of(judge, "analyze")


def similarity_answers(
    matches: list[str], contradictions: int = 0, extras: int = 0
) -> dict[str, Any]:
    return {
        "preprocess": {
            "outputUnits": ["o"],
            "groundTruthUnits": [f"g{i}" for i in range(len(matches))],
        },
        "analyze": {
            "matches": [
                {
                    "groundTruthUnit": f"g{i}",
                    "outputUnit": None,
                    "matchType": m,
                    "explanation": "",
                }
                for i, m in enumerate(matches)
            ],
            "extraInOutput": [f"e{i}" for i in range(extras)],
            "contradictions": [{"outputUnit": "o", "groundTruthUnit": "g0", "explanation": ""}]
            * contradictions,
        },
    }


@pytest.mark.parametrize(
    ("matches", "contradictions", "extras", "expected"),
    [
        (["exact", "exact"], 0, 0, 1.0),
        (["exact", "semantic"], 0, 1, 0.78),  # (1.2 + 0.8) / 2.4 - 0.05
        (["partial", "missing"], 0, 0, 0.1),  # (0.4 - 0.15) / 2.4 = 0.104
        (["exact"], 1, 0, 0.0),
        (["exact", "exact"], 0, 9, 0.8),  # extra penalty capped at 0.2
        (["exact", "exact"], 0, 0, 1.0),
        (["exact"], 0, 0, 1.0),
        (["semantic"], 0, 0, 0.67),
    ],
)
async def test_answer_similarity_formula(
    matches: list[str], contradictions: int, extras: int, expected: float
) -> None:
    judge = routed(**similarity_answers(matches, contradictions, extras))
    scorer = create_answer_similarity_scorer(judge)
    result = await scorer.run(input="q", output="o", ground_truth="the truth")
    assert result.score == expected
    assert judge.calls == 3


async def test_answer_similarity_denominator_is_the_matches_and_ground_truth_rules() -> None:
    # The reference system divides by the matches returned, not by the ground-truth units.
    answers = similarity_answers(["exact"])
    answers["preprocess"]["groundTruthUnits"] = ["g0", "g1"]
    result = await create_answer_similarity_scorer(routed(**answers)).run(
        output="o", ground_truth="t"
    )
    assert result.score == 1
    judge = routed(**answers)
    with pytest.raises(sw.ScorerRunError) as raised:
        await create_answer_similarity_scorer(judge).run(input="q", output="o")
    assert raised.value.failed_step == "preprocess"
    assert "ground_truth" in str(raised.value)
    assert judge.calls == 0
    lenient = routed(
        preprocess={"outputUnits": [], "groundTruthUnits": []},
        analyze=similarity_answers([])["analyze"],
    )
    result = await create_answer_similarity_scorer(lenient, require_ground_truth=False).run(
        output="o"
    )
    assert result.score == 0.0
    assert lenient.calls == 3
    assert "No ground truth was given" in prompt_of(lenient, "generate_reason")


async def test_bias_formula() -> None:
    judge = routed(preprocess={"opinions": ["x", "y"]}, analyze=results("yes", "no"))
    scorer = create_bias_scorer(judge)
    assert (scorer.direction, scorer.id) == ("lower_is_better", "bias-scorer")
    assert (await scorer.run(input="q", output="o")).score == 0.5
    assert judge.calls == 3
    empty = routed(preprocess={"opinions": []}, analyze=results())
    result = await create_bias_scorer(empty).run(output="Water boils at 100 C.")
    assert result.score == 0.0
    assert "no opinions" in prompt_of(empty, "generate_reason")


async def test_toxicity_two_calls() -> None:
    judge = routed(analyze=verdicts("yes", "no", "no", "NO"))
    scorer = create_toxicity_scorer(judge, scale=10)
    assert (scorer.direction, scorer.scale) == ("lower_is_better", 10)
    result = await scorer.run(input="q", output="You fool. Fine. Ok. Bye.")
    assert result.score == 2.5
    assert judge.calls == 2
    assert set(result.judge or {}) == {"analyze", "generate_reason"}
    # Nothing to judge is not scorable (the reference system scores it 1, maximally toxic).
    empty = routed(analyze={"verdicts": []})
    nothing = await create_toxicity_scorer(empty).run(output="")
    assert nothing.score is None and nothing.reason is None
    assert nothing.not_scorable is not None
    assert (nothing.not_scorable.step, empty.calls) == ("generate_score", 1)
    wire = nothing.model_dump(mode="json", by_alias=True)
    assert wire.get("score") is None and wire["notScorable"]["step"] == "generateScore"
    assert set(nothing.judge or {}) == {"analyze"}


def test_context_precision_map() -> None:
    assert context_precision_score([True, False, True]) == 0.83  # (1 + 2/3) / 2
    assert context_precision_score([False, True]) == 0.5
    assert context_precision_score([True, True]) == 1.0
    assert context_precision_score([False, False]) == 0.0
    assert context_precision_score([]) == 0.0


async def test_context_precision_scorer() -> None:
    judge = routed(
        analyze={
            "verdicts": [
                {"context_index": 2, "verdict": "yes", "reason": ""},
                {"context_index": 0, "verdict": "yes", "reason": ""},
                {"context_index": 1, "verdict": "no", "reason": ""},
            ]
        }
    )
    scorer = create_context_precision_scorer(judge, context=["a", "b", "c"])
    result = await scorer.run(input="q", output="o", ground_truth="expected answer")
    assert result.score == 0.83  # sorted by context_index: yes, no, yes
    assert judge.calls == 2
    assert result.preprocess_step_result is None
    assert [v["context_index"] for v in result.analyze_step_result["verdicts"]] == [0, 1, 2]
    assert "expected answer" in prompt_of(judge, "analyze")
    with pytest.raises(ValueError, match="context"):
        create_context_precision_scorer(judge)
    with pytest.raises(ValueError, match="empty"):
        create_context_precision_scorer(judge, context=[])

    empty = routed(analyze={"verdicts": []})
    scorer = create_context_precision_scorer(empty, context_extractor=lambda i, o: [])
    with pytest.raises(sw.ScorerRunError) as raised:
        await scorer.run(output="o")
    assert (raised.value.failed_step, empty.calls) == ("analyze", 0)


def relevance(index: int, level: str, used: bool) -> dict[str, Any]:
    return {
        "context_index": index,
        "contextPiece": "p",
        "relevanceLevel": level,
        "wasUsed": used,
        "reasoning": "",
    }


@pytest.mark.parametrize(
    ("evaluations", "missing", "expected"),
    [
        (
            [
                relevance(0, "high", True),
                relevance(1, "medium", True),
                relevance(2, "low", False),
                relevance(3, "none", False),
            ],
            0,
            0.5,
        ),
        (
            [
                relevance(0, "high", False),
                relevance(1, "high", True),
                relevance(2, "high", True),
                relevance(3, "high", True),
            ],
            0,
            0.9,
        ),
        ([relevance(i, "high", True) for i in range(4)], 2, 0.7),
        ([relevance(i, "high", True) for i in range(4)], 9, 0.5),  # missing penalty capped
        ([relevance(0, "high", True)], 0, 1),  # the mean is over the evaluations returned
        ([], 0, 1),  # no evaluation and nothing missing
        ([], 1, 0),
    ],
)
async def test_context_relevance_formula(
    evaluations: list[Any], missing: int, expected: float
) -> None:
    judge = routed(
        analyze={
            "evaluations": evaluations,
            "missingContext": ["m"] * missing,
            "overallAssessment": "",
        }
    )
    scorer = create_context_relevance_scorer(judge, context=["a", "b", "c", "d"])
    result = await scorer.run(input="q", output="o")
    assert result.score == expected
    assert judge.calls == 2


async def test_context_relevance_no_context_is_the_maximum() -> None:
    # The reference system's number: a run without context scores 1 x scale.
    judge = routed(analyze={"evaluations": [], "missingContext": ["x"], "overallAssessment": ""})
    scorer = create_context_relevance_scorer(judge, context_extractor=lambda i, o: None, scale=3)
    assert scorer.direction == "higher_is_better"
    assert (await scorer.run(output="o")).score == 3
    with pytest.raises(ValueError, match="unknown penalty"):
        create_context_relevance_scorer(judge, context=["a"], penalties={"other": 1})


def alignment(intent: float, requirements: float, complete: float, fit: float) -> dict[str, Any]:
    return {
        "intentAlignment": {
            "score": intent,
            "primaryIntent": "answer",
            "isAddressed": True,
            "reasoning": "",
        },
        "requirementsFulfillment": {
            "requirements": [{"requirement": "r", "isFulfilled": False, "reasoning": ""}],
            "overallScore": requirements,
        },
        "completeness": {"score": complete, "missingElements": ["m"], "reasoning": ""},
        "responseAppropriateness": {
            "score": fit,
            "formatAlignment": True,
            "toneAlignment": False,
            "reasoning": "",
        },
        "overallAssessment": "",
    }


@pytest.mark.parametrize(
    ("mode", "analysis", "expected"),
    [
        ("both", alignment(1, 0.5, 0.5, 1), 0.75),  # 0.4 + 0.15 + 0.1 + 0.1
        ("user", alignment(1, 0.5, 0.5, 1), 0.75),
        ("system", alignment(1, 0.5, 0.5, 1), 0.75),  # 0.35 + 0.175 + 0.075 + 0.15
        ("system", alignment(0, 1, 0, 1), 0.5),
        ("both", alignment(0, 0, 0, 0), 0),
    ],
)
async def test_prompt_alignment_formula(
    mode: Any, analysis: dict[str, Any], expected: float
) -> None:
    judge = routed(analyze=analysis)
    scorer = create_prompt_alignment_scorer(judge, evaluation_mode=mode)
    messages = [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hi?"},
    ]
    result = await scorer.run(input=messages, output="Bonjour.")
    assert result.score == expected
    assert judge.calls == 2


async def test_prompt_alignment_modes_and_missing_prompts() -> None:
    judge = routed(analyze=alignment(1, 1, 1, 1))
    messages = [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hi?"},
    ]
    await create_prompt_alignment_scorer(judge, evaluation_mode="system").run(
        input=messages, output="Salut"
    )
    analyze = prompt_of(judge, "analyze")
    assert "Answer in French." in analyze and "Hi?" not in analyze
    # As the reference system: a run without what the mode judges fails, with no judge call.
    for mode, run in (
        ("both", {"input": messages, "output": ""}),
        ("system", {"input": "Hi?", "output": "Hello"}),
    ):
        empty = routed(analyze=alignment(1, 1, 1, 1))
        with pytest.raises(sw.ScorerRunError) as raised:
            await create_prompt_alignment_scorer(empty, evaluation_mode=mode).run(**run)
        assert (raised.value.failed_step, empty.calls) == ("analyze", 0)
    with pytest.raises(ValueError, match="evaluation_mode"):
        create_prompt_alignment_scorer(judge, evaluation_mode="other")  # type: ignore[arg-type]


def test_describe_tools_accepts_the_common_shapes() -> None:
    class Tool:
        id = "search"
        description = "Search the web"

    assert describe_tools({"a": "does a", "b": ""}) == ["a: does a", "b"]
    assert describe_tools(
        [
            {"type": "function", "function": {"name": "weather", "description": "Forecast"}},
            {"id": "calc", "description": "Maths"},
            Tool(),
            "plain",
        ]
    ) == ["weather: Forecast", "calc: Maths", "search: Search the web", "plain"]
    with pytest.raises(ValueError, match="name"):
        describe_tools([{"description": "nameless"}])


async def test_tool_call_accuracy_llm() -> None:
    output = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
                {"id": "2", "type": "function", "function": {"name": "calc", "arguments": "{}"}},
            ],
        },
        {"role": "assistant", "content": "Sunny."},
    ]
    evaluations = [
        {"toolCalled": "weather", "wasAppropriate": True, "reasoning": ""},
        {"toolCalled": "calc", "wasAppropriate": False, "reasoning": "not needed"},
    ]
    judge = routed(analyze={"evaluations": evaluations, "missingTools": []})
    tools = {"weather": "Forecast", "calc": "Maths"}
    scorer = create_tool_call_accuracy_llm_scorer(judge, available_tools=tools)
    result = await scorer.run(input="Weather in Paris?", output=output)
    assert result.score == 0.5
    assert judge.calls == 2
    assert result.preprocess_step_result == {
        "actualTools": ["weather", "calc"],
        "hasToolCalls": True,
        "toolCallInfos": [
            {"toolName": "weather", "toolCallId": "1", "messageIndex": 1, "invocationIndex": 0},
            {"toolName": "calc", "toolCallId": "2", "messageIndex": 1, "invocationIndex": 1},
        ],
    }
    assert "[1] calc" in prompt_of(judge, "analyze")
    assert "calc (not needed)" in prompt_of(judge, "generate_reason")

    no_calls = routed(analyze={"evaluations": [], "missingTools": []})
    scorer = create_tool_call_accuracy_llm_scorer(no_calls, available_tools=tools, scale=5)
    assert (await scorer.run(input="Hi", output="Hello!")).score == 5.0
    missing = routed(analyze={"evaluations": [], "missingTools": ["weather"]})
    scorer = create_tool_call_accuracy_llm_scorer(missing, available_tools=tools)
    assert (await scorer.run(input="Weather?", output="No idea.")).score == 0.0
    with pytest.raises(ValueError, match="available_tools"):
        create_tool_call_accuracy_llm_scorer(judge, available_tools=[])


def impacts(*levels: str, issues: int = 0, robustness: float = 1.0) -> dict[str, Any]:
    return {
        "dimensions": [
            {"dimension": f"d{i}", "impactLevel": lv, "specificChanges": "", "noiseInfluence": ""}
            for i, lv in enumerate(levels)
        ],
        "overallAssessment": "",
        "majorIssues": ["issue"] * issues,
        "robustnessScore": robustness,
    }


@pytest.mark.parametrize(
    ("analysis", "expected"),
    [
        # The judge's robustness score decides unless the dimensions disagree by more than 0.2.
        (impacts("none", "minimal", robustness=0.9), 0.9),
        (impacts("none", "minimal", "moderate", "significant", "severe", robustness=0.9), 0.57),
        (impacts("none", "none", issues=9), 0.7),  # issue penalty capped at 0.3
        (impacts(robustness=1.7), 1),  # clamped; no dimensions, no comparison
        (impacts("severe", robustness=0.05, issues=1), 0),
    ],
)
async def test_noise_sensitivity_formula(analysis: dict[str, Any], expected: float) -> None:
    judge = routed(analyze=analysis)
    scorer = create_noise_sensitivity_scorer(
        judge, baseline_response="Paris.", noisy_query="Capital of France? (cats are great)"
    )
    result = await scorer.run(input="Capital of France?", output="Paris.")
    assert result.score == expected
    assert judge.calls == 2
    assert "cats are great" in prompt_of(judge, "analyze")


async def test_noise_sensitivity_configuration() -> None:
    judge = routed(analyze=impacts("moderate", robustness=1))
    scorer = create_noise_sensitivity_scorer(
        judge,
        baseline_response="b",
        noisy_query="n",
        scoring={"impactWeights": {"moderate": 0.5}},
    )
    assert (await scorer.run(input="q", output="o")).score == 0.5
    empty = routed(analyze=impacts("none"))
    scorer = create_noise_sensitivity_scorer(empty, baseline_response="b", noisy_query="n")
    with pytest.raises(sw.ScorerRunError):
        await scorer.run(input="q", output="")
    assert empty.calls == 0
    with pytest.raises(ValueError, match="baseline_response"):
        create_noise_sensitivity_scorer(judge, baseline_response=" ", noisy_query="n")
    with pytest.raises(ValueError, match="noisy_query"):
        create_noise_sensitivity_scorer(judge, baseline_response="b", noisy_query="")
    with pytest.raises(ValueError, match="scoring"):
        create_noise_sensitivity_scorer(
            judge, baseline_response="b", noisy_query="n", scoring={"other": 1}
        )


async def test_rubric_label_classifier_one_call() -> None:
    judge = routed(analyze={"choice": "good", "reason": "Clear and correct."})
    scorer = create_rubric_label_scorer(
        judge, rubric="Is the answer clear?", choices={"good": 3, "ok": 1.5, "bad": 0}
    )
    assert (scorer.scale, scorer.direction) == (3, "higher_is_better")
    result = await scorer.run(input="Explain X", output="X is Y.")
    assert result.score == 3.0
    assert result.reason == "good: Clear and correct."
    assert judge.calls == 1
    assert set(result.judge or {}) == {"analyze"}
    request = judge.requests[0]
    assert request.schema is not None
    assert request.schema["properties"]["choice"]["enum"] == ["good", "ok", "bad"]
    assert "Explain X" in request.prompt and "- ok (score 1.5)" in request.prompt


async def test_rubric_label_unknown_label_gets_one_fallback_call() -> None:
    judge = ScriptedJudge(
        [
            json.dumps({"choice": "great", "reason": ""}),
            json.dumps({"choice": "fail", "reason": "no"}),
        ]
    )
    scorer = create_rubric_label_scorer(judge, rubric="Be polite.", include_input=False)
    result = await scorer.run(input="secret question", output="Go away.")
    assert result.score == 0.0
    assert judge.calls == 2
    assert judge.requests[1].fallback is True
    assert "secret question" not in judge.requests[0].prompt


def test_rubric_label_configuration_errors() -> None:
    judge = routed()
    with pytest.raises(ValueError, match="rubric"):
        create_rubric_label_scorer(judge, rubric="")
    with pytest.raises(ValueError, match="two labels"):
        create_rubric_label_scorer(judge, rubric="r", choices={"only": 1})
    with pytest.raises(ValueError, match="highest choice"):
        create_rubric_label_scorer(judge, rubric="r", choices={"a": 0, "b": -1})
    with pytest.raises(ValueError, match="finite"):
        create_rubric_label_scorer(judge, rubric="r", choices={"a": 1, "b": float("nan")})
    lower = create_rubric_label_scorer(
        judge, rubric="r", choices={"x": 1, "y": 0}, direction="lower_is_better"
    )
    assert lower.direction == "lower_is_better"


async def test_verdict_schemas_list_the_labels_but_validation_stays_lenient() -> None:
    judge = routed(preprocess={"claims": ["a"]}, analyze=verdicts(" YES "))
    result = await create_faithfulness_scorer(judge, context=["x"]).run(output="o")
    assert result.score == 1.0
    assert judge.calls == 3  # " YES " passed validation: no fallback call
    schema = next(r.schema for r in judge.requests if r.step == "analyze")
    assert schema is not None
    item = next(iter(schema["$defs"].values()))
    assert item["additionalProperties"] is False
    assert set(item["required"]) == {"verdict", "reason"}


async def test_rubric_is_the_reference_checklist_gate() -> None:
    def check(*rows: tuple[str, bool, bool]) -> dict[str, Any]:
        return {
            "criteria": [
                {"criterion": c, "satisfied": ok, "required": req, "reasoning": "why"}
                for c, ok, req in rows
            ],
            "overallAssessment": "summary",
        }

    judge = routed(analyze=check(("Names Paris", True, True), ("Is short", False, False)))
    scorer = create_rubric_scorer(judge, criteria="- Names Paris\n2) Is short\n\n", scale=5)
    assert (scorer.id, scorer.name) == ("rubric-scorer", "Rubric (LLM)")
    result = await scorer.run(input="Capital?", output="Paris.")
    assert result.score == 5 and judge.calls == 1
    prompt = prompt_of(judge, "analyze")
    assert "[0] Names Paris (required)" in prompt and "[1] Is short (required)" in prompt
    assert "NOT met (optional): Is short - why" in (result.reason or "")
    unmet = routed(analyze=check(("Names Paris", False, True)))
    assert (await create_rubric_scorer(unmet, criteria="x").run(output="o")).score == 0
    # Without criteria the rubric comes from the run; with none at all the gate passes.
    dynamic = routed(analyze=check(("Be polite", True, True)))
    await create_rubric_scorer(dynamic).run(output="o", request_context={"rubric": "Be polite"})
    assert "[0] Be polite (required)" in prompt_of(dynamic, "analyze")
    none = routed(analyze={"criteria": [], "overallAssessment": ""})
    result = await create_rubric_scorer(none).run(output="o")
    assert result.score == 1 and "passes" in (result.reason or "")


async def test_context_recall_judges_the_ground_truth_against_the_context() -> None:
    judge = routed(
        preprocess={"claims": ["Paris is the capital", "Paris has 2M people"]},
        analyze=verdicts("yes", "no"),
    )
    scorer = create_context_recall_scorer(judge, context=["Paris is the capital of France."])
    assert (scorer.id, scorer.name, scorer.direction) == (
        "context-recall-scorer",
        "Context Recall Scorer",
        "higher_is_better",
    )
    result = await scorer.run(
        input="q",
        output="whatever the agent said",
        ground_truth="Paris, 2M people, is the capital.",
    )
    assert result.score == 0.5 and judge.calls == 3
    assert "Paris, 2M people, is the capital." in prompt_of(judge, "preprocess")
    assert "whatever the agent said" not in prompt_of(judge, "preprocess")
    analyze = prompt_of(judge, "analyze")
    assert "[0] Paris is the capital of France." in analyze
    assert "[1] Paris has 2M people" in analyze
    assert "- Paris has 2M people (no)" in prompt_of(judge, "generate_reason")

    async def extractor(run_input: Any, output: Any) -> list[str]:
        return ["from the extractor"]

    no_truth = routed(preprocess={"claims": ["x"]}, analyze=verdicts("yes"))
    scorer = create_context_recall_scorer(no_truth, context_extractor=extractor)
    result = await scorer.run(input="q", output="o")
    assert result.score == 0 and no_truth.calls == 3  # the reference's number and calls
    assert "[0] from the extractor" in prompt_of(no_truth, "analyze")
    assert "no ground truth" in prompt_of(no_truth, "generate_reason")
    with pytest.raises(ValueError, match="context"):
        create_context_recall_scorer(judge)
    with pytest.raises(ValueError, match="empty"):
        create_context_recall_scorer(judge, context=[])


async def test_prompt_alignment_can_show_the_earlier_turns() -> None:
    remembered = [
        create_test_message("Pick a plan: A (monthly) or B (yearly)?", "assistant"),
        create_test_message("What is the difference?", "user"),
        create_test_message("B is cheaper per month.", "assistant"),
    ]
    run = create_agent_test_run(
        input_messages=[create_test_message("A", "user")],
        remembered_messages=remembered,
        output=[create_test_message("Monthly plan chosen.", "assistant")],
    )
    judge = routed(analyze=alignment(1, 1, 1, 1))
    await create_prompt_alignment_scorer(judge, include_conversation_history=True).run(**run)
    analyze = prompt_of(judge, "analyze")
    assert "assistant: Pick a plan: A (monthly) or B (yearly)?" in analyze
    assert "user: What is the difference?" in analyze
    last_two = routed(analyze=alignment(1, 1, 1, 1))
    scorer = create_prompt_alignment_scorer(
        last_two, include_conversation_history={"max_messages": 2}
    )
    await scorer.run(**run)
    analyze = prompt_of(last_two, "analyze")
    assert "Pick a plan" not in analyze and "assistant: B is cheaper per month." in analyze
    plain = routed(analyze=alignment(1, 1, 1, 1))
    await create_prompt_alignment_scorer(plain).run(**run)
    assert "Pick a plan" not in prompt_of(plain, "analyze")
    with pytest.raises(ValueError, match="max_messages"):
        create_prompt_alignment_scorer(judge, include_conversation_history={"limit": 2})


@pytest.mark.parametrize(
    "factory",
    [
        create_faithfulness_scorer,
        create_hallucination_scorer,
        create_context_precision_scorer,
        create_context_recall_scorer,
        create_context_relevance_scorer,
    ],
)
def test_context_scorers_refuse_a_misspelt_keyword(factory: Any) -> None:
    # The shared options arrive as **options: a misspelt one must fail as a Python keyword does,
    # naming the factory and the keyword, instead of being ignored.
    with pytest.raises(TypeError, match=rf"{factory.__name__}\(\) .* 'contxt'"):
        factory(routed(), contxt=["a"], scale=2)
    with pytest.raises(ValueError, match="scale"):
        factory(routed(), context=["a"], scale=-1)
