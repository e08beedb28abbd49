"""A scripted judge of known noise: it reads an item's true quality from the prompt and answers
that quality plus Gaussian noise of a known standard deviation, from a seeded generator."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import scorewatch as sw
from scorewatch.judge import JudgeRequest
from scorewatch.testing import ScriptedJudge

__all__ = ["items_of_quality", "noisy_judge", "noisy_scorer", "quality_text"]

_QUALITY = re.compile(r"quality=([0-9.]+)")


def quality_text(quality: float) -> str:
    """An output whose true quality the noisy judge can read."""
    return f"an answer of quality={quality:.4f}"


def items_of_quality(count: int, seed: int, shift: float = 0.0) -> list[dict[str, Any]]:
    """`count` dataset items, true qualities spread over 0.3..0.8 (from `seed`), each lowered by
    `shift` (a real drop of the agent)."""
    rng = random.Random(seed)
    return [
        {"input": f"question {i}", "output": quality_text(rng.uniform(0.3, 0.8) - shift)}
        for i in range(count)
    ]


def noisy_judge(sigma: float, seed: int) -> ScriptedJudge:
    """Answers `{"score": quality + N(0, sigma)}`, clipped to 0..1 (rarely reached here)."""
    rng = random.Random(seed)

    def answer(request: JudgeRequest) -> str:
        found = _QUALITY.search(request.prompt)
        assert found is not None, request.prompt
        score = min(1.0, max(0.0, float(found.group(1)) + rng.gauss(0.0, sigma)))
        return json.dumps({"score": score})

    return ScriptedJudge(answer, model_id="noisy-judge")


def noisy_scorer(judge: sw.JudgeModel) -> sw.Scorer:
    return sw.create_scorer(
        id="noisy",
        description="a judged score with known noise",
        judge=sw.JudgeConfig(model=judge, instructions="Rate the answer's quality."),
    ).generate_score(sw.PromptStep(description="rate", create_prompt=_prompt))


def _prompt(ctx: sw.StepContext) -> str:
    return f"Rate this answer: {ctx.run.output}"
