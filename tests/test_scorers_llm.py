"""LLM-judged prebuilt scorers on scripted verdicts: the score formulas, empty cases, direction,
configuration, input shapes and the exact number of judge calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

import scorewatch as sw
from scorewatch.judge.protocol import JudgeRequest
from scorewatch.scorers.answer_relevancy import create_answer_relevancy_scorer
from scorewatch.scorers.answer_similarity import create_answer_similarity_scorer
from scorewatch.scorers.bias import create_bias_scorer
from scorewatch.scorers.context_precision import (
    context_precision_score,
    create_context_precision_scorer,
)
from scorewatch.scorers.context_relevance import create_context_relevance_scorer
from scorewatch.scorers.faithfulness import create_faithfulness_scorer
from scorewatch.scorers.hallucination import create_hallucination_scorer
from scorewatch.scorers.noise_sensitivity import create_noise_sensitivity_scorer
from scorewatch.scorers.prompt_alignment import create_prompt_alignment_scorer
from scorewatch.scorers.rubric import create_rubric_scorer
from scorewatch.scorers.tool_call_accuracy_llm import (
    create_tool_call_accuracy_llm_scorer,
    describe_tools,
)
from scorewatch.scorers.toxicity import create_toxicity_scorer
from scorewatch.scorers.utils import (
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
)
from scorewatch.testing import ScriptedJudge

REASON = "The score is what it is because of the verdicts."


def routed(**answers: Any) -> ScriptedJudge:
    """A judge answering by step name; dict/list answers are sent as JSON text."""

    def reply(request: JudgeRequest) -> str:
        answer = answers.get(request.step, REASON)
        return answer if isinstance(answer, str) else json.dumps(answer)

    return ScriptedJudge(reply)


def verdicts(*labels: str) -> dict[str, Any]:
    return {
        "verdicts": [{"item": f"i{n}", "verdict": v, "reason": "r"} for n, v in enumerate(labels)]
    }


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


async def test_faithfulness_missing_verdicts_are_not_support_and_no_claims_is_zero() -> None:
    judge = routed(preprocess={"claims": ["a", "b", "c"]}, analyze=verdicts("yes"))
    result = await create_faithfulness_scorer(judge, context=["x"]).run(input="q", output="o")
    assert result.score == 0.33
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
    assert "[0] from the extractor" in analyze and "[1]" not in analyze.split("Claims:")[0]

    # No context option: the agent's tool results are the context.
    tools = [create_tool_invocation(tool_call_id="t1", tool_name="weather", result={"temp": 21})]
    run = create_agent_test_run(
        input_messages=[create_test_message("Weather?", "user")],
        output=[create_test_message("It is 21 degrees.", "assistant", tool_invocations=tools)],
    )
    judge = routed(preprocess={"claims": ["It is 21 degrees"]}, analyze=verdicts("yes"))
    result = await create_faithfulness_scorer(judge).run(**run)
    assert result.score == 1.0
    assert '[0] weather: {"temp": 21}' in prompt_of(judge, "analyze")
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
        "analyze": verdicts("yes", "unsure", "no"),
    }
    judge = routed(**answers)
    result = await create_answer_relevancy_scorer(judge).run(input="q", output="o")
    assert result.score == 0.43  # (1 + 0.3) / 3
    assert judge.calls == 3
    half = await create_answer_relevancy_scorer(routed(**answers), uncertainty_weight=0.5).run(
        input="q", output="o"
    )
    assert half.score == 0.5
    empty = routed(preprocess={"statements": []}, analyze={"verdicts": []})
    assert (await create_answer_relevancy_scorer(empty).run(input="q", output="")).score == 0.0
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
        judge = routed(preprocess={"statements": ["Paris."]}, analyze=verdicts("yes"))
        result = await create_answer_relevancy_scorer(judge).run(**run)
        assert result.score == 1.0
        assert "Paris." in prompt_of(judge, "preprocess")
        assert "Capital of France?" in prompt_of(judge, "analyze")


def similarity_answers(
    matches: list[str], contradictions: int = 0, extras: int = 0
) -> dict[str, Any]:
    return {
        "preprocess": {
            "output_units": ["o"],
            "ground_truth_units": [f"g{i}" for i in range(len(matches))],
        },
        "analyze": {
            "matches": [
                {
                    "ground_truth_unit": f"g{i}",
                    "output_unit": None,
                    "match_type": m,
                    "explanation": "",
                }
                for i, m in enumerate(matches)
            ],
            "extra_in_output": [f"e{i}" for i in range(extras)],
            "contradictions": [{"output_unit": "o", "ground_truth_unit": "g0", "explanation": ""}]
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


async def test_answer_similarity_fewer_matches_count_as_missing_and_ground_truth_rules() -> None:
    answers = similarity_answers(["exact"])
    answers["preprocess"]["ground_truth_units"] = ["g0", "g1"]
    result = await create_answer_similarity_scorer(routed(**answers)).run(
        output="o", ground_truth="t"
    )
    assert result.score == 0.44  # (1.2 - 0.15) / 2.4
    judge = routed(**answers)
    with pytest.raises(sw.ScorerRunError) as raised:
        await create_answer_similarity_scorer(judge).run(input="q", output="o")
    assert raised.value.failed_step == "preprocess"
    assert "ground_truth" in str(raised.value)
    assert judge.calls == 0
    lenient = routed(
        preprocess={"output_units": [], "ground_truth_units": []},
        analyze=similarity_answers([])["analyze"],
    )
    result = await create_answer_similarity_scorer(lenient, require_ground_truth=False).run(
        output="o"
    )
    assert result.score == 0.0
    assert lenient.calls == 3
    assert "No ground truth was given" in prompt_of(lenient, "generate_reason")


async def test_bias_formula() -> None:
    judge = routed(preprocess={"opinions": ["x", "y"]}, analyze=verdicts("yes", "no"))
    scorer = create_bias_scorer(judge)
    assert (scorer.direction, scorer.id) == ("lower_is_better", "bias-scorer")
    assert (await scorer.run(input="q", output="o")).score == 0.5
    assert judge.calls == 3
    empty = routed(preprocess={"opinions": []}, analyze={"verdicts": []})
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
    empty = routed(analyze={"verdicts": []})
    assert (await create_toxicity_scorer(empty).run(output="")).score == 0.0


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
                {"context_index": 7, "verdict": "yes", "reason": "out of range"},
            ]
        }
    )
    scorer = create_context_precision_scorer(judge, context=["a", "b", "c"])
    result = await scorer.run(input="q", output="o", ground_truth="expected answer")
    assert result.score == 0.83
    assert judge.calls == 2
    assert result.preprocess_step_result == {"context": ["a", "b", "c"]}
    assert "expected answer" in prompt_of(judge, "analyze")
    with pytest.raises(ValueError, match="context"):
        create_context_precision_scorer(judge)
    with pytest.raises(ValueError, match="empty"):
        create_context_precision_scorer(judge, context=[])

    calls: list[int] = []

    def extractor(run_input: Any, output: Any) -> list[str]:
        calls.append(1)
        return []

    empty = routed(analyze={"verdicts": []})
    result = await create_context_precision_scorer(empty, context_extractor=extractor).run(
        output="o"
    )
    assert result.score == 0.0
    assert calls == [1]  # resolved once per run
    assert "No context was given" in prompt_of(empty, "generate_reason")


def relevance(index: int, level: str, used: bool) -> dict[str, Any]:
    return {"context_index": index, "relevance": level, "was_used": used, "reason": ""}


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
        ([relevance(0, "high", True)], 0, 0.25),  # unevaluated pieces weigh 0
    ],
)
async def test_context_relevance_formula(
    evaluations: list[Any], missing: int, expected: float
) -> None:
    judge = routed(analyze={"evaluations": evaluations, "missing_context": ["m"] * missing})
    scorer = create_context_relevance_scorer(judge, context=["a", "b", "c", "d"])
    result = await scorer.run(input="q", output="o")
    assert result.score == expected
    assert judge.calls == 2


async def test_context_relevance_no_context_is_zero() -> None:
    judge = routed(analyze={"evaluations": [], "missing_context": []})
    scorer = create_context_relevance_scorer(judge, context_extractor=lambda i, o: None)
    assert scorer.direction == "higher_is_better"
    assert (await scorer.run(output="o")).score == 0.0


def alignment(
    addressed: str, requirements: list[tuple[str, str]], fmt: bool, tone: bool
) -> dict[str, Any]:
    return {
        "intent": {"primary_intent": "answer", "addressed": addressed, "reason": ""},
        "requirements": [
            {"requirement": f"r{i}", "source": source, "fulfilled": done, "reason": ""}
            for i, (source, done) in enumerate(requirements)
        ],
        "format_fits": fmt,
        "tone_fits": tone,
        "assessment": "",
    }


@pytest.mark.parametrize(
    ("mode", "analysis", "expected"),
    [
        (
            "both",
            alignment("yes", [("user", "yes"), ("user", "no"), ("system", "yes")], True, False),
            0.76,
        ),
        (
            "user",
            alignment("yes", [("user", "yes"), ("user", "no"), ("system", "yes")], True, False),
            0.77,
        ),
        ("both", alignment("partly", [], True, True), 0.6),  # requirements take the intent value
        ("both", alignment("yes", [("user", "yes")], True, True), 1.0),
        ("both", alignment("no", [("user", "no")], False, False), 0.0),
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


async def test_prompt_alignment_modes_and_nothing_to_judge() -> None:
    judge = routed(analyze=alignment("yes", [], True, True))
    messages = [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hi?"},
    ]
    await create_prompt_alignment_scorer(judge, evaluation_mode="system").run(
        input=messages, output="Salut"
    )
    analyze = prompt_of(judge, "analyze")
    assert "Answer in French." in analyze and "Hi?" not in analyze
    empty = routed(analyze=alignment("yes", [], True, True))
    result = await create_prompt_alignment_scorer(empty).run(input=messages, output="  ")
    assert result.score == 0.0
    assert "response was empty" in prompt_of(empty, "generate_reason")
    no_system = routed(analyze=alignment("yes", [], True, True))
    scorer = create_prompt_alignment_scorer(no_system, evaluation_mode="system")
    assert (await scorer.run(input="Hi?", output="Hello")).score == 0.0
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
        {"tool": "weather", "appropriate": True, "reason": ""},
        {"tool": "calc", "appropriate": False, "reason": "not needed"},
    ]
    judge = routed(analyze={"evaluations": evaluations, "missing_tools": []})
    tools = {"weather": "Forecast", "calc": "Maths"}
    scorer = create_tool_call_accuracy_llm_scorer(judge, available_tools=tools)
    result = await scorer.run(input="Weather in Paris?", output=output)
    assert result.score == 0.5
    assert judge.calls == 2
    assert result.preprocess_step_result == {
        "actual_tools": ["weather", "calc"],
        "has_tool_calls": True,
    }
    assert "[1] calc" in prompt_of(judge, "analyze")
    assert "calc (not needed)" in prompt_of(judge, "generate_reason")

    no_calls = routed(analyze={"evaluations": [], "missing_tools": []})
    scorer = create_tool_call_accuracy_llm_scorer(no_calls, available_tools=tools, scale=5)
    assert (await scorer.run(input="Hi", output="Hello!")).score == 5.0
    missing = routed(analyze={"evaluations": [], "missing_tools": ["weather"]})
    scorer = create_tool_call_accuracy_llm_scorer(missing, available_tools=tools)
    assert (await scorer.run(input="Weather?", output="No idea.")).score == 0.0
    with pytest.raises(ValueError, match="available_tools"):
        create_tool_call_accuracy_llm_scorer(judge, available_tools=[])


def impacts(*levels: str, issues: int = 0) -> dict[str, Any]:
    return {
        "dimensions": [
            {"dimension": f"d{i}", "impact": lv, "change": ""} for i, lv in enumerate(levels)
        ],
        "major_issues": ["issue"] * issues,
        "assessment": "",
    }


@pytest.mark.parametrize(
    ("analysis", "expected"),
    [
        (impacts("none", "minimal", "moderate", "significant", "severe"), 0.57),
        (impacts("none", "minimal", "moderate", "significant", "severe", issues=1), 0.47),
        (impacts("none", "none", issues=9), 0.7),  # issue penalty capped at 0.3
        (impacts("none", "none"), 1.0),
        (impacts(), 0.0),
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
    judge = routed(analyze=impacts("moderate"))
    scorer = create_noise_sensitivity_scorer(
        judge, baseline_response="b", impact_weights={"moderate": 0.5}
    )
    assert (await scorer.run(input="q", output="o")).score == 0.5
    empty = routed(analyze=impacts("none"))
    scorer = create_noise_sensitivity_scorer(empty, baseline_response="b")
    assert (await scorer.run(input="q", output="")).score == 0.0
    with pytest.raises(ValueError, match="baseline_response"):
        create_noise_sensitivity_scorer(judge, baseline_response=" ")


async def test_rubric_classifier_one_call() -> None:
    judge = routed(analyze={"choice": "good", "reason": "Clear and correct."})
    scorer = create_rubric_scorer(
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


async def test_rubric_unknown_label_gets_one_fallback_call() -> None:
    judge = ScriptedJudge(
        [
            json.dumps({"choice": "great", "reason": ""}),
            json.dumps({"choice": "fail", "reason": "no"}),
        ]
    )
    scorer = create_rubric_scorer(judge, rubric="Be polite.", include_input=False)
    result = await scorer.run(input="secret question", output="Go away.")
    assert result.score == 0.0
    assert judge.calls == 2
    assert judge.requests[1].fallback is True
    assert "secret question" not in judge.requests[0].prompt


def test_rubric_configuration_errors() -> None:
    judge = routed()
    with pytest.raises(ValueError, match="rubric"):
        create_rubric_scorer(judge, rubric="")
    with pytest.raises(ValueError, match="two labels"):
        create_rubric_scorer(judge, rubric="r", choices={"only": 1})
    with pytest.raises(ValueError, match="highest choice"):
        create_rubric_scorer(judge, rubric="r", choices={"a": 0, "b": -1})
    with pytest.raises(ValueError, match="finite"):
        create_rubric_scorer(judge, rubric="r", choices={"a": 1, "b": float("nan")})
    lower = create_rubric_scorer(
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
    assert item["properties"]["verdict"]["enum"] == ["yes", "no", "unsure"]
    assert item["additionalProperties"] is False
    assert set(item["required"]) == {"item", "verdict", "reason"}
