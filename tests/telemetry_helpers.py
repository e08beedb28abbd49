"""Shared set-up for the telemetry tests: small scorers; the in-memory providers are the shipped
`scorewatch.testing.in_memory_telemetry`, so our tests use what users' tests use."""

from __future__ import annotations

import json
from typing import Any

import scorewatch as sw
from scorewatch.testing import InMemoryTelemetry, in_memory_telemetry

__all__ = [
    "ANALYSIS_SCHEMA",
    "InMemoryTelemetry",
    "in_memory_telemetry",
    "prompt_scorer",
    "verdicts",
]


ANALYSIS_SCHEMA = {
    "type": "object",
    "properties": {"verdicts": {"type": "array", "items": {"type": "string"}}},
    "required": ["verdicts"],
}


def prompt_scorer(judge: sw.JudgeModel, scorer_id: str = "quality", **kwargs: Any) -> sw.Scorer:
    """preprocess (function) -> analyze (prompt) -> generate_score (function) -> reason (prompt)."""
    return (
        sw.create_scorer(
            id=scorer_id,
            description="test scorer",
            judge=sw.JudgeConfig(model=judge, instructions="You are a strict judge."),
            **kwargs,
        )
        .preprocess(lambda ctx: {"words": len(str(ctx.run.output).split())})
        .analyze(
            sw.PromptStep(
                description="find verdicts",
                create_prompt=lambda ctx: f"SECRET-PROMPT about {ctx.run.output}",
                output_schema=ANALYSIS_SCHEMA,
            )
        )
        .generate_score(lambda ctx: len(ctx.results.analyze_step_result["verdicts"]) / 4)
        .generate_reason(
            sw.PromptStep(
                description="explain",
                create_prompt=lambda ctx: f"SECRET-REASON-PROMPT score={ctx.score}",
            )
        )
    )


def verdicts(n: int) -> str:
    return json.dumps({"verdicts": ["yes"] * n})
