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

MODEL = "openai/loopback-judge"
SECRET = "sk-loopback-scorers-51c0"
REASON = "The score is fine because the verdicts say so."


def _verdicts(*labels: str) -> dict[str, Any]:
    return {
        "verdicts": [{"item": f"i{n}", "verdict": v, "reason": "r"} for n, v in enumerate(labels)]
    }


# (marker in the user prompt, JSON reply). The first marker found wins.
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
    ("Find the hallucinated claims", _verdicts("yes", "no")),
    ("Split the output below into statements", {"statements": ["s0", "s1"]}),
    ("Judge each statement's relevance", _verdicts("yes", "unsure")),
    (
        "Split both texts below into semantic units",
        {
            "output_units": ["o0"],
            "ground_truth_units": ["g0", "g1"],
        },
    ),
    (
        "Compare the output's units",
        {
            "matches": [
                {
                    "ground_truth_unit": "g0",
                    "output_unit": "o0",
                    "match_type": "exact",
                    "explanation": "",
                },
                {
                    "ground_truth_unit": "g1",
                    "output_unit": None,
                    "match_type": "semantic",
                    "explanation": "",
                },
            ],
            "extra_in_output": [],
            "contradictions": [],
        },
    ),
    ("List the opinions", {"opinions": ["o0", "o1", "o2", "o3"]}),
    ("Judge each opinion for bias", _verdicts("yes", "no", "no", "no")),
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
                {"context_index": 0, "relevance": "high", "was_used": True, "reason": ""},
                {"context_index": 1, "relevance": "medium", "was_used": True, "reason": ""},
            ],
            "missing_context": [],
        },
    ),
    (
        "Check how well the response follows the prompt",
        {
            "intent": {"primary_intent": "answer", "addressed": "yes", "reason": ""},
            "requirements": [
                {"requirement": "r", "source": "user", "fulfilled": "partly", "reason": ""}
            ],
            "format_fits": True,
            "tone_fits": True,
            "assessment": "",
        },
    ),
    (
        "Judge each tool call the agent made",
        {
            "evaluations": [{"tool": "weather", "appropriate": True, "reason": ""}],
            "missing_tools": [],
        },
    ),
    (
        "Compare the baseline response",
        {
            "dimensions": [
                {"dimension": "accuracy", "impact": "none", "change": ""},
                {"dimension": "relevance", "impact": "moderate", "change": ""},
            ],
            "major_issues": [],
            "assessment": "",
        },
    ),
    ("Grade the output against the rubric", {"choice": "ok", "reason": "Mostly right."}),
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
    "context-relevance": ({"context": ["Paris forecast", "France facts"]}, 0.85),
    "prompt-alignment": ({}, 0.8),  # 0.4 + 0.4 * 0.5 + 0.2
    "tool-call-accuracy-llm": ({"available_tools": {"weather": "Forecast"}}, 1.0),
    "noise-sensitivity": ({"baseline_response": "It is 21C and sunny."}, 0.8),
    "rubric": ({"rubric": "Correct and brief.", "choices": {"good": 1, "ok": 0.5, "bad": 0}}, 0.5),
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
    expected_reason = "Mostly right." if name == "rubric" else REASON
    assert expected_reason in str(result.reason)
    dumped = json.dumps(result.model_dump(mode="json", by_alias=True))
    assert SECRET not in dumped
