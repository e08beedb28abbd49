"""The trajectory accuracy scorer, LLM variant: was the agent's sequence of steps a good one?

1. preprocess (function), the reference system's shape: `{"actualTrajectory",
   "actualTrajectoryFormatted", "expectedTrajectoryFormatted"?, "hasSteps"}`: the run's
   trajectory (`_trajectory.trajectory_of`) and the numbered step lists shown to the judge;
2. analyze (judge): `{"stepEvaluations": [{"stepName", "wasNecessary", "wasInOrder",
   "reasoning"}], "missingSteps"?: [str], "extraSteps"?: [str], "overallAssessment"}`;
3. generate_score (function), the reference system's formula: 0.6 x necessary share + 0.3 x
   in-order share - 0.1 x missing / (evaluated + missing), clamped to 0..1 and rounded; with no
   step evaluated: 0 when a step is missing, 0.5 when there are extra steps, else 1;
4. generate_reason (judge): a short explanation.

Expected steps (optional): the `expected_trajectory` option (a list of expected steps or a
recorded trajectory), else the run's `expected_trajectory["steps"]` when not empty. Without
them the judge weighs the steps against the request alone. Range 0..1, higher is better.
Routing marker of the analyze prompt: `Review the steps the agent took`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import JudgeAnswer, Reason, field_of, items_of, judged_scorer
from ._text import request_text, response_text
from ._trajectory import (
    expectation_of,
    expected_steps_of,
    format_expected_steps,
    format_trajectory,
    trajectory_of,
)
from .utils import round_to_two_decimals

__all__ = [
    "TRAJECTORY_ACCURACY_LLM_SCORER_ID",
    "create_trajectory_accuracy_llm_scorer",
    "trajectory_review_score",
]

TRAJECTORY_ACCURACY_LLM_SCORER_ID = "llm-trajectory-accuracy-scorer"

INSTRUCTIONS = (
    "You review the path an AI agent took to serve a request: the tool calls and other steps, "
    "in the order it took them. A good path takes every step the task needs, no needless or "
    "repeated step, and respects dependencies between steps (a step that uses another's result "
    "comes after it). Judge the path, not only the final answer, and answer in the JSON format "
    "asked for."
)

_CARD = ScorerCard(
    name="trajectory-accuracy-llm",
    id=TRAJECTORY_ACCURACY_LLM_SCORER_ID,
    scorer_name="Trajectory Accuracy (LLM)",
    description="Judges whether the agent's sequence of steps was necessary, ordered and complete",
    judge_calls=2,
    instructions=INSTRUCTIONS,
    subject="trajectory",
    type="trajectory",
)


class StepEvaluation(JudgeAnswer):
    stepName: str = ""
    wasNecessary: bool
    wasInOrder: bool
    reasoning: str = ""


class TrajectoryReview(JudgeAnswer):
    stepEvaluations: list[StepEvaluation]
    missingSteps: list[str] = Field(default_factory=list)
    extraSteps: list[str] = Field(default_factory=list)
    overallAssessment: str = ""


def trajectory_review_score(
    evaluations: Sequence[Any], missing: Sequence[Any], extra: Sequence[Any]
) -> float:
    """The reference system's trajectory formula (see the module docstring)."""
    if not evaluations:
        return 0 if missing else 0.5 if extra else 1
    total = len(evaluations)
    necessary = sum(1 for e in evaluations if field_of(e, "wasNecessary") is True)
    ordered = sum(1 for e in evaluations if field_of(e, "wasInOrder") is True)
    penalty = len(missing) / (total + len(missing)) if missing else 0
    score = necessary / total * 0.6 + ordered / total * 0.3 - penalty * 0.1
    return round_to_two_decimals(max(0.0, min(1.0, score)))


def _analyze_prompt(request: str, response: str, taken: str, expected: str | None) -> str:
    if expected:
        guide = f"""The steps the agent was expected to take (a guide to the order, not a rule):
{expected}

For each step taken, say whether it was needed ("wasNecessary") and whether it came at a \
sensible point ("wasInOrder"). List in "missingSteps" the expected steps the agent skipped and \
in "extraSteps" the steps it took that the task did not need."""
    else:
        guide = """No expected steps are given: judge against the request itself. For each step \
taken, say whether the task needed it ("wasNecessary") and whether it came at a sensible point \
given what it depends on ("wasInOrder"). List in "missingSteps" the steps the task needed but \
the agent never took and in "extraSteps" needless or repeated ones."""
    return f"""Review the steps the agent took to serve this request.

Request:
{request or "(none)"}

Agent's final answer:
{response or "(none)"}

Steps taken, in order:
{taken}

{guide}

Format: {{"stepEvaluations":[{{"stepName":str,"wasNecessary":bool,"wasInOrder":bool,\
"reasoning":str}}],"missingSteps":[str],"extraSteps":[str],"overallAssessment":str}}
"""


@prebuilt(_CARD)
def create_trajectory_accuracy_llm_scorer(
    model: str | JudgeModel,
    *,
    expected_trajectory: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """How necessary, well ordered and complete the judge finds the run's steps (module
    docstring). Two judge calls; range 0..1; higher is better."""
    static = expected_steps_of(expected_trajectory)

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        actual = trajectory_of(ctx.run.output)
        steps = static
        if steps is None:
            item = expectation_of(ctx.run.expected_trajectory, where="run expected_trajectory")
            steps = (item or {}).get("steps") or None
        found: dict[str, Any] = {
            "actualTrajectory": actual,
            "actualTrajectoryFormatted": format_trajectory(actual["steps"]),
        }
        if steps is not None:
            found["expectedTrajectoryFormatted"] = format_expected_steps(steps)
        found["hasSteps"] = bool(actual["steps"])
        return found

    def analyze_prompt(ctx: StepContext) -> str:
        found = ctx.results.preprocess_step_result or {}
        raw = (found.get("actualTrajectory") or {}).get("rawOutput")
        return _analyze_prompt(
            request_text(ctx.run.input),
            response_text(raw),
            found.get("actualTrajectoryFormatted") or "(no steps taken)",
            found.get("expectedTrajectoryFormatted"),
        )

    def score(ctx: StepContext) -> float:
        review = ctx.results.analyze_step_result
        return trajectory_review_score(
            items_of(review, "stepEvaluations"),
            items_of(review, "missingSteps"),
            items_of(review, "extraSteps"),
        )

    def explain(ctx: StepContext) -> Reason:
        review = ctx.results.analyze_step_result
        judged = [
            f"{field_of(e, 'stepName')}: "
            f"{'needed' if field_of(e, 'wasNecessary') else 'not needed'}, "
            f"{'in order' if field_of(e, 'wasInOrder') else 'out of order'}"
            for e in items_of(review, "stepEvaluations")
        ]
        missing = ", ".join(map(str, items_of(review, "missingSteps"))) or "none"
        extra = ", ".join(map(str, items_of(review, "extraSteps"))) or "none"
        return Reason(
            facts=f"Request:\n{request_text(ctx.run.input)}\n\nSteps judged:\n"
            + ("\n".join(f"- {line}" for line in judged) or "- none")
            + f"\nMissing steps: {missing}\nNeedless steps: {extra}",
        )

    analyze = PromptStep(
        description="Review the steps the agent took",
        create_prompt=analyze_prompt,
        output_schema=TrajectoryReview,
    )
    return judged_scorer(
        _CARD, model, model_options, 1, analyze, score, explain, preprocess=inspect_run
    )
