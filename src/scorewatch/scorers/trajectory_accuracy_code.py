"""The trajectory accuracy scorer, code variant: did the agent take the expected steps?

Model-free. The run's trajectory (`_trajectory.trajectory_of`: agent messages, OpenAI chat
messages, or a trajectory built from spans) is compared with the expected steps
(`_trajectory_checks.compare_trajectories`):

* expected steps: the `expected_trajectory` option (a list of expected steps, or a recorded
  trajectory `{"steps": [...]}`), else the run's `expected_trajectory["steps"]`;
* `ordering` (`relaxed` by default, `strict`, `unordered`) and `allow_repeated_steps` (True),
  each overridden by the run's `expected_trajectory` when it sets them.

Preprocess result (the reference system's shape): `{"actualTrajectory", "expectedTrajectory":
{"steps"}, "comparison", "actualStepNames", "expectedStepNames"}`; without any expected steps,
`comparison` and `expectedTrajectory` are absent, `error` says why, and the score is 0 (as in the
reference system). Score: the comparison's score, 0..1, higher is better.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core import Scorer, StepContext
from ._card import ScorerCard, prebuilt
from ._trajectory import ORDERINGS, expectation_of, expected_steps_of, trajectory_of
from ._trajectory_checks import compare_trajectories

__all__ = ["TRAJECTORY_ACCURACY_CODE_SCORER_ID", "create_trajectory_accuracy_code_scorer"]

TRAJECTORY_ACCURACY_CODE_SCORER_ID = "code-trajectory-accuracy-scorer"

_CARD = ScorerCard(
    name="trajectory-accuracy-code",
    id=TRAJECTORY_ACCURACY_CODE_SCORER_ID,
    scorer_name="Trajectory Accuracy Scorer",
    description="Compares the steps taken with the expected steps (strict, relaxed or unordered)",
    type="trajectory",
)

NO_EXPECTATION = (
    "nothing to compare with: give expected_trajectory to the scorer or an expected_trajectory "
    "with steps to the run"
)


@prebuilt(_CARD)
def create_trajectory_accuracy_code_scorer(
    *,
    expected_trajectory: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
    ordering: str = "relaxed",
    allow_repeated_steps: bool = True,
) -> Scorer:
    """Share of the expected steps the run's trajectory matched (see the module docstring)."""
    if ordering not in ORDERINGS:
        raise ValueError(f"ordering must be one of {', '.join(ORDERINGS)}, got {ordering!r}")
    static = expected_steps_of(expected_trajectory)

    def compare(ctx: StepContext) -> dict[str, Any]:
        actual = trajectory_of(ctx.run.output)
        names = [step.get("name") for step in actual["steps"]]
        item = expectation_of(ctx.run.expected_trajectory, where="run expected_trajectory")
        steps = static if static is not None else (item or {}).get("steps")
        if steps is None:
            return {
                "actualTrajectory": actual,
                "actualStepNames": names,
                "expectedStepNames": [],
                "error": NO_EXPECTATION,
            }
        comparison = compare_trajectories(
            actual["steps"],
            steps,
            ordering=(item or {}).get("ordering") or ordering,
            allow_repeated_steps=_flag(
                (item or {}).get("allowRepeatedSteps"), allow_repeated_steps
            ),
        )
        return {
            "actualTrajectory": actual,
            "expectedTrajectory": {"steps": steps},
            "comparison": comparison,
            "actualStepNames": names,
            "expectedStepNames": [step.get("name") for step in steps],
        }

    def score(ctx: StepContext) -> float:
        comparison = (ctx.results.preprocess_step_result or {}).get("comparison")
        return comparison["score"] if comparison else 0

    shown = f"[{' -> '.join(str(s.get('name')) for s in static)}]" if static else "the run's"
    return (
        _CARD.create_scorer(
            description=f"Compares the steps taken with {shown} expected steps ({ordering})"
        )
        .preprocess(compare)
        .generate_score(score)
    )


def _flag(value: Any, default: bool) -> bool:
    return default if value is None else bool(value)
