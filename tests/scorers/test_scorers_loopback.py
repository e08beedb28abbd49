"""Every LLM-judged prebuilt scorer, built through the registry, run once over real litellm HTTP
against the loopback judge server: the judge calls reach the wire, the replies parse, the score
is the formula's, and the number of calls is the one the registry documents."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from scorewatch.scorers.registry import PREBUILT, build_scorer
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.integration

MODEL = "openai/loopback-judge"
SECRET = "sk-loopback-scorers-51c0"
REASON = "The score is fine because the verdicts say so."


def _verdicts(*labels: str) -> dict[str, Any]:
    return {"verdicts": [{"verdict": v, "reason": "r"} for v in labels]}


def _results(*labels: str) -> dict[str, Any]:
    return {"results": [{"result": v, "reason": "r"} for v in labels]}


# (marker in the user prompt, JSON reply in the reference system's answer schema). The first
# marker found wins.
ROUTES: list[tuple[str, Any]] = [
    (
        "Part 1 (alignment)",
        {
            "alignment": [{"claim": "c", "supported": True, "reason": ""}],
            "questions": ["q0?", "q1?"],
        },
    ),
    (
        "Decide whether each question can be answered",
        {
            "coverage": [
                {"question": "q0?", "answered": True, "reason": ""},
                {"question": "q1?", "answered": False, "reason": ""},
            ]
        },
    ),
    ("Extract the factual claims", {"claims": ["c0", "c1"]}),
    ("Judge each claim against the context", _verdicts("yes", "unsure")),
    ("Check each claim of the expected answer", _verdicts("yes", "no")),
    (
        "Find the hallucinated claims",
        {
            "verdicts": [
                {"statement": "c0", "verdict": "yes", "reason": ""},
                {"statement": "c1", "verdict": "no", "reason": ""},
            ]
        },
    ),
    ("Split the output below into statements", {"statements": ["s0", "s1"]}),
    ("Judge each statement's relevance", _results("yes", "unsure")),
    (
        "Split both texts below into semantic units",
        {"outputUnits": ["o0"], "groundTruthUnits": ["g0", "g1"]},
    ),
    (
        "Compare the output's units",
        {
            "matches": [
                {
                    "groundTruthUnit": "g0",
                    "outputUnit": "o0",
                    "matchType": "exact",
                    "explanation": "",
                },
                {
                    "groundTruthUnit": "g1",
                    "outputUnit": None,
                    "matchType": "semantic",
                    "explanation": "",
                },
            ],
            "extraInOutput": [],
            "contradictions": [],
        },
    ),
    ("List the opinions", {"opinions": ["o0", "o1", "o2", "o3"]}),
    ("Judge each opinion for bias", _results("yes", "no", "no", "no")),
    ("Judge each statement of the output for toxicity", _verdicts("no", "no", "no", "yes")),
    (
        "Judge whether each context piece was useful",
        {
            "verdicts": [
                {"context_index": 0, "verdict": "no", "reason": ""},
                {"context_index": 1, "verdict": "yes", "reason": ""},
            ]
        },
    ),
    (
        "Rate each context piece's relevance",
        {
            "evaluations": [
                {
                    "context_index": 0,
                    "contextPiece": "Paris forecast",
                    "relevanceLevel": "high",
                    "wasUsed": True,
                    "reasoning": "",
                },
                {
                    "context_index": 1,
                    "contextPiece": "France facts",
                    "relevanceLevel": "medium",
                    "wasUsed": True,
                    "reasoning": "",
                },
            ],
            "missingContext": [],
            "overallAssessment": "",
        },
    ),
    (
        "Check how well the response follows the prompt",
        {
            "intentAlignment": {
                "score": 1,
                "primaryIntent": "answer",
                "isAddressed": True,
                "reasoning": "",
            },
            "requirementsFulfillment": {
                "requirements": [{"requirement": "r", "isFulfilled": False, "reasoning": ""}],
                "overallScore": 0.5,
            },
            "completeness": {"score": 1, "missingElements": [], "reasoning": ""},
            "responseAppropriateness": {
                "score": 1,
                "formatAlignment": True,
                "toneAlignment": True,
                "reasoning": "",
            },
            "overallAssessment": "",
        },
    ),
    (
        "Judge each tool call the agent made",
        {
            "evaluations": [{"toolCalled": "weather", "wasAppropriate": True, "reasoning": ""}],
            "missingTools": [],
        },
    ),
    (
        "Compare the baseline response",
        {
            "dimensions": [
                {
                    "dimension": "accuracy",
                    "impactLevel": "none",
                    "specificChanges": "",
                    "noiseInfluence": "",
                },
                {
                    "dimension": "relevance",
                    "impactLevel": "moderate",
                    "specificChanges": "",
                    "noiseInfluence": "",
                },
            ],
            "overallAssessment": "",
            "majorIssues": [],
            "robustnessScore": 0.8,
        },
    ),
    (
        "Check the output against each criterion",
        {
            "criteria": [
                {"criterion": "Correct", "satisfied": True, "required": True, "reasoning": "ok"}
            ],
            "overallAssessment": "Mostly right.",
        },
    ),
    ("Grade the output against the rubric", {"choice": "ok", "reason": "Mostly right."}),
    (
        "Review the steps the agent took",
        {
            "stepEvaluations": [
                {"stepName": "weather", "wasNecessary": True, "wasInOrder": False, "reasoning": ""}
            ],
            "missingSteps": ["geocode"],
            "overallAssessment": "",
        },
    ),
    ("Grade this conversation", {"satisfied": True, "reasoning": REASON}),
]


def answer(body: dict[str, Any]) -> Reply:
    prompt = str(body["messages"][-1]["content"])
    if prompt.startswith("Explain the"):
        return Reply(text=REASON)
    for marker, reply in ROUTES:
        if marker in prompt:
            return Reply(text=json.dumps(reply))
    return Reply(text="unrouted prompt")


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(answer) as running:
        yield running


OUTPUT = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "1", "content": "21C and sunny"},
    {"role": "assistant", "content": "It is 21C and sunny in Paris."},
]

# name -> (options, expected score)
CASES: dict[str, tuple[dict[str, Any], float]] = {
    "summarization": ({}, 0.5),  # min(alignment 1, coverage 1/2)
    "faithfulness": ({}, 0.5),  # context = the tool result; 1 of 2 supported
    "hallucination": ({"context": ["21C and sunny"]}, 0.5),
    "answer-relevancy": ({}, 0.65),  # (1 + 0.3) / 2
    "answer-similarity": ({}, 0.83),  # (1.2 + 0.8) / 2.4
    "toxicity": ({}, 0.25),
    "bias": ({}, 0.25),
    "context-precision": ({"context": ["Lyon news", "Paris forecast"]}, 0.5),
    "context-recall": ({"context": ["21C and sunny"]}, 0.5),
    "context-relevance": ({"context": ["Paris forecast", "France facts"]}, 0.85),
    "prompt-alignment": ({}, 0.85),  # 0.4 + 0.3 * 0.5 + 0.2 + 0.1
    "tool-call-accuracy-llm": ({"available_tools": {"weather": "Forecast"}}, 1.0),
    "noise-sensitivity": (
        {"baseline_response": "It is 21C and sunny.", "noisy_query": "Weather in Paris? Cats!"},
        0.8,
    ),
    "rubric": ({"criteria": "- Correct"}, 1),
    "rubric-label": (
        {"rubric": "Correct and brief.", "choices": {"good": 1, "ok": 0.5, "bad": 0}},
        0.5,
    ),
    "trajectory-accuracy-llm": ({}, 0.55),  # 0.6 x 1 + 0.3 x 0 - 0.1 x 1/2
    "multi-turn-judge": ({"criterion": "The weather in Paris is given.", "scale": 2}, 2),
}

LLM_NAMES = sorted(name for name, spec in PREBUILT.items() if spec.needs_model)


def test_every_llm_scorer_has_a_loopback_case() -> None:
    assert sorted(CASES) == LLM_NAMES


@pytest.mark.parametrize("name", LLM_NAMES)
async def test_llm_scorer_over_loopback_http(server: LoopbackJudgeServer, name: str) -> None:
    options, expected = CASES[name]
    scorer = build_scorer(
        name,
        model=MODEL,
        model_options={"api_base": server.base_url, "api_key": SECRET, "timeout": 10.0},
        **options,
    )
    server.clear_requests()
    result = await scorer.run(
        input="What is the weather in Paris?",
        output=OUTPUT,
        ground_truth="It is 21C and sunny in Paris.",
    )
    assert result.score == expected
    spec = PREBUILT[name]
    assert scorer.direction == spec.direction
    assert server.request_count == spec.judge_calls
    prompts = [str(r.messages[-1]["content"]) for r in server.requests]
    assert not any("unrouted" in p for p in prompts)
    records = result.judge or {}
    assert sum(len(r.executions) for r in records.values()) == spec.judge_calls
    expected_reason = "Mostly right." if name.startswith("rubric") else REASON
    assert expected_reason in str(result.reason)
    dumped = json.dumps(result.model_dump(mode="json", by_alias=True))
    assert SECRET not in dumped
