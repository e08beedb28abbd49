"""How many characters the summarization scorer sends its judge for a 400-word source.

Target: at most 10,000 characters over the three calls, system instructions included.
Run: `.venv/bin/python benchmarks/summarization_prompt_size.py` (no network, no model).
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from scorewatch.judge.protocol import JudgeRequest
from scorewatch.judge.structured import render_messages
from scorewatch.scorers import create_summarization_scorer
from scorewatch.testing import ScriptedJudge

SENTENCES = [
    "Northwind Logistics was founded in 2009 in Rotterdam by Anna de Vries and Pieter Janssen.",
    "The company began with three refrigerated trucks serving flower growers in South Holland.",
    "By 2015 it operated 140 vehicles and had opened depots in Antwerp, Hamburg and Lyon.",
    "In 2018 Northwind introduced a route-planning system that cut average delivery times by 12%.",
    "The system was built in-house by a team of nine engineers led by Marta Kowalski.",
    "Revenue reached 210 million euros in 2022, up from 164 million euros two years earlier.",
    "Most of that growth came from pharmaceutical cold-chain contracts signed in 2021.",
    "The company employs about 1,800 people, roughly a third of them drivers.",
    "Northwind replaced 60 diesel trucks with battery-electric models during 2023.",
    "Management says the electric fleet should reach 40% of all vehicles by 2027.",
    "A labour dispute in Hamburg in early 2024 halted deliveries there for eleven days.",
    "The dispute ended with a two-year agreement that raised driver wages by 6.5%.",
    "Northwind remains privately owned; the founders hold a majority of the shares.",
    "A minority stake of 25% was sold to the pension fund PFZW in 2020.",
    "The company has said it has no plans for a stock-market listing before 2028.",
]


def source_of(words: int) -> str:
    text: list[str] = []
    while len(text) < words:
        for sentence in SENTENCES:
            text.extend(sentence.split())
    return " ".join(text[:words]).rstrip(",;") + "."


SUMMARY = (
    "Northwind Logistics, founded in Rotterdam in 2009, grew from three refrigerated trucks to a "
    "1,800-person company with 210 million euros of revenue in 2022, driven by pharmaceutical "
    "cold-chain contracts. It is electrifying its fleet, aiming for 40% electric vehicles by 2027, "
    "and settled a Hamburg labour dispute in 2024 with a 6.5% wage rise."
)

QUESTIONS = [
    "Was Northwind Logistics founded in 2009?",
    "Was the company founded in Rotterdam?",
    "Did the company start with three refrigerated trucks?",
    "Did revenue reach 210 million euros in 2022?",
    "Did pharmaceutical cold-chain contracts drive most of the growth?",
    "Does the company employ about 1,800 people?",
    "Does management target 40% electric vehicles by 2027?",
    "Did a 2024 labour dispute halt deliveries in Hamburg for eleven days?",
    "Was a 25% minority stake sold to PFZW in 2020?",
    "Did the 2018 route-planning system cut delivery times by 12%?",
]
CLAIMS = [
    "Northwind Logistics was founded in Rotterdam",
    "It was founded in 2009",
    "It started with three refrigerated trucks",
    "It has 1,800 employees",
    "Revenue was 210 million euros in 2022",
    "Growth was driven by pharmaceutical cold-chain contracts",
    "It aims for 40% electric vehicles by 2027",
    "A Hamburg labour dispute was settled in 2024 with a 6.5% wage rise",
]


def reply(request: JudgeRequest) -> str:
    if request.step == "preprocess":
        alignment = [{"claim": c, "supported": True, "reason": "Stated."} for c in CLAIMS]
        return json.dumps({"alignment": alignment, "questions": QUESTIONS})
    if request.step == "analyze":
        coverage = [
            {"question": q, "answered": i < 7, "reason": "Stated." if i < 7 else "Omitted."}
            for i, q in enumerate(QUESTIONS)
        ]
        return json.dumps({"coverage": coverage})
    return "The score is 0.7 because coverage decided it: the summary omits three facts."


def measure() -> dict[str, int]:
    """Characters of the three judge calls for one 400-word source, counted two ways."""
    source = source_of(400)
    judge = ScriptedJudge(reply)
    scorer = create_summarization_scorer(judge)
    scorer.run_sync(input=source, output=SUMMARY)
    totals = {"calls": len(judge.requests), "native": 0, "system": 0}
    for request in judge.requests:
        schema = json.dumps(request.schema, separators=(",", ":")) if request.schema else ""
        totals["native"] += len(request.instructions) + len(request.prompt) + len(schema)
        totals["system"] += sum(len(m["content"]) for m in render_messages(request, "system"))
    return totals


def main() -> None:
    source = source_of(400)
    judge = ScriptedJudge(reply)
    scorer = create_summarization_scorer(judge)
    result = scorer.run_sync(input=source, output=SUMMARY)
    print(f"source: {len(source.split())} words, {len(source)} chars; summary {len(SUMMARY)} chars")
    print(f"score {result.score}")
    totals = {"native": 0, "system": 0}
    for request in judge.requests:
        schema = json.dumps(request.schema, separators=(",", ":")) if request.schema else ""
        native = len(request.instructions) + len(request.prompt) + len(schema)
        system = sum(len(m["content"]) for m in render_messages(request, "system"))
        totals["native"] += native
        totals["system"] += system
        print(
            f"  {request.step:16} instructions {len(request.instructions):5}  "
            f"prompt {len(request.prompt):5}  schema {len(schema):4}  "
            f"total native {native:5} / schema-in-system {system:5}"
        )
    print(
        f"all three calls: {totals['native']} chars with a native response format, "
        f"{totals['system']} with the schema in the system message (target <= 10000)"
    )


if __name__ == "__main__":
    main()
