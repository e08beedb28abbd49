"""The noise-sensitivity scorer: does noise in the query change the agent's answer?

The run is the agent answering a NOISY query (the query with distracting, irrelevant or
misleading content added); the scorer compares that answer with the `baseline_response` the
agent gave to the clean query. The run input is the clean query (the user's message) unless
`noisy_query` is given, which is then shown as the noisy version.

Two judge calls:

1. analyze (judge), the reference system's shape: `{"dimensions": [{"dimension",
   "impactLevel" (none | minimal | moderate | significant | severe), "specificChanges",
   "noiseInfluence"}], "overallAssessment", "majorIssues": [str], "robustnessScore"}`;
2. generate_score (function), the reference system's formula: the judge's `robustnessScore`
   clamped to 0..1; when dimensions were rated and their mean impact weight differs from it by
   more than `discrepancy_threshold` (0.2), the lower of the two; minus
   `min(major issues x major_issue_per_item, max_major_issue_penalty)`, at least 0, times
   `scale`, rounded half up to two decimals. Weights: none 1, minimal 0.85, moderate 0.6,
   significant 0.3, severe 0.1;
3. generate_reason (judge): a short explanation.

`scoring` overrides the numbers: `{"impact_weights": {...}, "discrepancy_threshold": 0.2,
"penalties": {"major_issue_per_item": 0.1, "max_major_issue_penalty": 0.3}}` (the reference's
camelCase keys work too). Range 0..scale, higher is better (more robust). Routing marker of the
analyze prompt: `Compare the baseline response with the response to the noisy query`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field
from pydantic.alias_generators import to_snake

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import (
    JudgeAnswer,
    Reason,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    one_of,
    require_scale,
)
from ._text import request_text, response_text
from ._verdicts import label_of
from .utils import round_to_two_decimals

__all__ = [
    "DIMENSIONS",
    "IMPACT_WEIGHTS",
    "NOISE_SENSITIVITY_SCORER_ID",
    "NoiseScoring",
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
    name="noise-sensitivity",
    id=NOISE_SENSITIVITY_SCORER_ID,
    scorer_name="Noise Sensitivity (LLM)",
    description="Measures how well the agent's answer resists distracting or misleading "
    "content added to its query",
    judge_calls=2,
    instructions=INSTRUCTIONS,
    subject="noise sensitivity",
)


class DimensionImpact(JudgeAnswer):
    dimension: str = ""
    impactLevel: str = one_of("none", "minimal", "moderate", "significant", "severe")
    specificChanges: str = ""
    noiseInfluence: str = ""


class NoiseImpact(JudgeAnswer):
    dimensions: list[DimensionImpact]
    overallAssessment: str = ""
    majorIssues: list[str] = Field(default_factory=list)
    robustnessScore: float


@dataclass(frozen=True, slots=True)
class NoiseScoring:
    """The numbers of the noise-sensitivity formula (see the module docstring)."""

    impact_weights: Mapping[str, float] = field(default_factory=lambda: dict(IMPACT_WEIGHTS))
    discrepancy_threshold: float = 0.2
    major_issue_per_item: float = 0.1
    max_major_issue_penalty: float = 0.3

    @classmethod
    def of(cls, scoring: Mapping[str, Any] | None) -> NoiseScoring:
        given = {to_snake(key): value for key, value in (scoring or {}).items()}
        unknown = set(given) - {"impact_weights", "discrepancy_threshold", "penalties"}
        if unknown:
            raise ValueError(f"unknown scoring option(s): {', '.join(sorted(unknown))}")
        weights = {to_snake(k): float(v) for k, v in (given.get("impact_weights") or {}).items()}
        if set(weights) - set(IMPACT_WEIGHTS):
            raise ValueError(f"impact_weights keys are {', '.join(IMPACT_WEIGHTS)}")
        penalties = {to_snake(k): float(v) for k, v in (given.get("penalties") or {}).items()}
        if set(penalties) - {"major_issue_per_item", "max_major_issue_penalty"}:
            raise ValueError("penalties keys are major_issue_per_item, max_major_issue_penalty")
        return cls(
            impact_weights={**IMPACT_WEIGHTS, **weights},
            discrepancy_threshold=float(given.get("discrepancy_threshold", 0.2)),
            major_issue_per_item=penalties.get("major_issue_per_item", 0.1),
            max_major_issue_penalty=penalties.get("max_major_issue_penalty", 0.3),
        )


def noise_sensitivity_score(
    analysis: Any, scoring: NoiseScoring | None = None, scale: float = 1
) -> float:
    """The robustness score of the judge's analysis (see the module docstring)."""
    rules = scoring or NoiseScoring()
    robustness = field_of(analysis, "robustnessScore")
    if isinstance(robustness, bool) or not isinstance(robustness, int | float):
        raise ValueError("the judge's analysis has no numeric robustnessScore")
    value = max(0.0, min(1.0, float(robustness)))
    dimensions = items_of(analysis, "dimensions")
    levels = [label_of(d, "impactLevel") for d in dimensions]
    # An unknown level leaves the judge's score alone, as the reference's NaN comparison does.
    if levels and all(level in rules.impact_weights for level in levels):
        computed = sum(rules.impact_weights[level] for level in levels) / len(levels)
        if abs(value - computed) > rules.discrepancy_threshold:
            value = min(value, computed)
    issues = len(items_of(analysis, "majorIssues"))
    value -= min(issues * rules.major_issue_per_item, rules.max_major_issue_penalty)
    return round_to_two_decimals(max(0.0, value) * scale)


def _analyze_prompt(
    query: str, baseline: str, noisy_query: str, response: str, noise_type: str | None
) -> str:
    noisy = f"\nNoisy query:\n{noisy_query}\n"
    kind = f" (noise type: {noise_type})" if noise_type else ""
    return f"""Compare the baseline response with the response to the noisy query{kind}. For \
each dimension - {", ".join(DIMENSIONS)} - rate the noise's impact on the noisy response \
("impactLevel"): "none", "minimal", "moderate", "significant" or "severe". List in \
"majorIssues" the serious problems the noise caused (empty if none), and give your own \
"robustnessScore" from 0 (the noise ruined the answer) to 1 (no effect).

Original query:
{query or "(none)"}
{noisy}
Baseline response (to the original query):
{baseline}

Response to the noisy query:
{response}

Format: {{"dimensions":[{{"dimension":str,"impactLevel":str,"specificChanges":str,\
"noiseInfluence":str}}],"overallAssessment":str,"majorIssues":[str],"robustnessScore":number}}
"""


@prebuilt(_CARD)
def create_noise_sensitivity_scorer(
    model: str | JudgeModel,
    *,
    baseline_response: str,
    noisy_query: str,
    noise_type: str | None = None,
    scoring: Mapping[str, Any] | None = None,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Robustness of the agent's answer to `noisy_query`, against `baseline_response` (its
    answer to the clean query, the run input). Two judge calls; range 0..scale; higher is
    better.
    """
    require_scale(scale)
    for name, value in (("baseline_response", baseline_response), ("noisy_query", noisy_query)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"the noise sensitivity scorer needs a non-empty {name}")
    rules = NoiseScoring.of(scoring)

    def analyze_prompt(ctx: StepContext) -> str:
        query, response = request_text(ctx.run.input), response_text(ctx.run.output)
        if not query or not response:
            raise ValueError("the noise sensitivity scorer needs the run's query and response")
        return _analyze_prompt(query, baseline_response, noisy_query, response, noise_type)

    def score(ctx: StepContext) -> float:
        return noise_sensitivity_score(ctx.results.analyze_step_result, rules, scale)

    def explain(ctx: StepContext) -> Reason:
        impact = ctx.results.analyze_step_result
        rows = [
            f"{field_of(d, 'dimension')}: {label_of(d, 'impactLevel') or 'not rated'}"
            for d in items_of(impact, "dimensions")
        ]
        return Reason(
            facts=f"Impact of the noise per dimension:\n{bullets(rows)}\n"
            f"Major issues:\n{bullets([str(i) for i in items_of(impact, 'majorIssues')])}\n"
            f"Judge's robustness score: {field_of(impact, 'robustnessScore')}\n"
            "(A higher score means the answer resisted the noise better.)",
        )

    analyze = PromptStep(
        description="Rate the impact of the noise on the response",
        create_prompt=analyze_prompt,
        output_schema=NoiseImpact,
    )
    return judged_scorer(_CARD, model, model_options, scale, analyze, score, explain)
