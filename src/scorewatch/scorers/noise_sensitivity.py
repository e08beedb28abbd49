"""The noise-sensitivity scorer: does noise in the query change the agent's answer?

The run is the agent answering a NOISY query (the query with distracting, irrelevant or
misleading content added); the scorer compares that answer with the `baseline_response` the
agent gave to the clean query. The run input is the clean query (the user's message) unless
`noisy_query` is given, which is then shown as the noisy version.

Two judge calls:

1. analyze (judge): the impact of the noise on five fixed dimensions - `accuracy`,
   `completeness`, `relevance`, `consistency` (with the baseline), `noise_resistance` (the
   noise itself was not repeated or acted on) - each `none`, `minimal`, `moderate`,
   `significant` or `severe`; plus the major issues the noise caused;
2. generate_score (function): mean impact weight over the judged dimensions minus
   `min(major issues x major_issue_penalty, max_major_issue_penalty)`, clamped to 0..1, times
   `scale`, rounded half up to two decimals. Weights: none 1, minimal 0.85, moderate 0.6,
   significant 0.3, severe 0.1 (override with `impact_weights`). No dimension judged, or an
   empty response -> 0;
3. generate_reason (judge): a short explanation.

Range 0..scale, higher is better (more robust). Routing marker of the analyze prompt: `Compare
the baseline response with the response to the noisy query`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._judging import (
    JudgeAnswer,
    Reason,
    ScorerCard,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    one_of,
    require_scale,
)
from ._text import request_text, response_text
from ._verdicts import label_of, weight_of
from .utils import round_to_two_decimals

__all__ = [
    "DIMENSIONS",
    "IMPACT_WEIGHTS",
    "NOISE_SENSITIVITY_SCORER_ID",
    "create_noise_sensitivity_scorer",
    "noise_sensitivity_score",
]

NOISE_SENSITIVITY_SCORER_ID = "noise-sensitivity-scorer"
DIMENSIONS = ("accuracy", "completeness", "relevance", "consistency", "noise_resistance")
IMPACT_WEIGHTS: Mapping[str, float] = {
    "none": 1.0,
    "minimal": 0.85,
    "moderate": 0.6,
    "significant": 0.3,
    "severe": 0.1,
}

INSTRUCTIONS = (
    "You test an agent's robustness. You compare its answer to a clean query with its answer to "
    "the same query with noise added, and judge how much the noise changed the answer's "
    "quality. Better wording is not a change; a lost fact, an added error, or following the "
    "noise is."
)

_CARD = ScorerCard(
    id=NOISE_SENSITIVITY_SCORER_ID,
    name="Noise Sensitivity Scorer",
    description="Measures how well the agent's answer resists distracting or misleading "
    "content added to its query",
    instructions=INSTRUCTIONS,
    subject="noise sensitivity",
)


class DimensionImpact(JudgeAnswer):
    dimension: str = one_of(*DIMENSIONS)
    impact: str = one_of("none", "minimal", "moderate", "significant", "severe")
    change: str = ""


class NoiseImpact(JudgeAnswer):
    dimensions: list[DimensionImpact]
    major_issues: list[str] = Field(default_factory=list)
    assessment: str = ""


def noise_sensitivity_score(
    dimensions: Sequence[Any],
    major_issues: int,
    *,
    impact_weights: Mapping[str, float] = IMPACT_WEIGHTS,
    major_issue_penalty: float = 0.1,
    max_major_issue_penalty: float = 0.3,
    scale: float = 1,
) -> float:
    """Robustness from the judged dimensions (see the module docstring); 0 without any."""
    weights = [weight_of(d, "impact", impact_weights) for d in dimensions]
    if not weights:
        return 0.0
    value = sum(weights) / len(weights)
    value -= min(major_issues * major_issue_penalty, max_major_issue_penalty)
    return round_to_two_decimals(max(0.0, min(1.0, value)) * scale)


def _analyze_prompt(
    query: str, baseline: str, noisy_query: str | None, response: str, noise_type: str | None
) -> str:
    noisy = f"\nNoisy query:\n{noisy_query}\n" if noisy_query else ""
    kind = f" (noise type: {noise_type})" if noise_type else ""
    return f"""Compare the baseline response with the response to the noisy query{kind}. For \
each dimension - {", ".join(DIMENSIONS)} - rate the noise's impact on the noisy response: \
"none", "minimal", "moderate", "significant" or "severe". List in "major_issues" the serious \
problems the noise caused (empty if none).

Original query:
{query or "(none)"}
{noisy}
Baseline response (to the original query):
{baseline}

Response to the noisy query:
{response}

Format: {{"dimensions":[{{"dimension":str,"impact":str,"change":str}}],"major_issues":[str],\
"assessment":str}}
"""


def create_noise_sensitivity_scorer(
    model: str | JudgeModel,
    *,
    baseline_response: str,
    noisy_query: str | None = None,
    noise_type: str | None = None,
    impact_weights: Mapping[str, float] | None = None,
    major_issue_penalty: float = 0.1,
    max_major_issue_penalty: float = 0.3,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Robustness of the agent's answer to noise in its query, against `baseline_response`.

    Two judge calls; range 0..scale; higher is better.
    """
    require_scale(scale)
    if not isinstance(baseline_response, str) or not baseline_response.strip():
        raise ValueError("the noise sensitivity scorer needs a non-empty baseline_response")
    weights = {**IMPACT_WEIGHTS, **(impact_weights or {})}

    def analyze_prompt(ctx: StepContext) -> str:
        return _analyze_prompt(
            request_text(ctx.run.input),
            baseline_response,
            noisy_query,
            response_text(ctx.run.output),
            noise_type,
        )

    def empty_response(ctx: StepContext) -> str | None:
        if response_text(ctx.run.output).strip():
            return None
        return "The response to the noisy query was empty, so the score is 0."

    def score(ctx: StepContext) -> float:
        impact = ctx.results.analyze_step_result
        return noise_sensitivity_score(
            items_of(impact, "dimensions"),
            len(items_of(impact, "major_issues")),
            impact_weights=weights,
            major_issue_penalty=major_issue_penalty,
            max_major_issue_penalty=max_major_issue_penalty,
            scale=scale,
        )

    def explain(ctx: StepContext) -> Reason:
        impact = ctx.results.analyze_step_result
        rows = [
            f"{field_of(d, 'dimension')}: {label_of(d, 'impact') or 'not rated'}"
            for d in items_of(impact, "dimensions")
        ]
        return Reason(
            facts=f"Impact of the noise per dimension:\n{bullets(rows)}\n"
            f"Major issues:\n{bullets([str(i) for i in items_of(impact, 'major_issues')])}\n"
            "(A higher score means the answer resisted the noise better.)",
            empty_note=None if rows else "No dimension was rated, so the score is 0.",
        )

    return judged_scorer(
        _CARD,
        model=model,
        model_options=model_options,
        scale=scale,
        analyze=PromptStep(
            description="Rate the impact of the noise on the response",
            create_prompt=analyze_prompt,
            output_schema=NoiseImpact,
        ),
        score=score,
        explain=explain,
        nothing_to_judge=empty_response,
    )
