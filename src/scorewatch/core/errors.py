"""Scorer errors: construction mistakes, run preconditions, and `ScorerRunError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScorewatchError
from .steps import StepName, camel_step

if TYPE_CHECKING:
    from .result import ScorerRunSnapshot

__all__ = [
    "INVALID_RUN",
    "INVALID_SCORER_DEFINITION",
    "INVALID_STEP_RESULT",
    "MISSING_GENERATE_SCORE",
    "MISSING_ID",
    "MISSING_MODEL_OR_INSTRUCTIONS",
    "MISSING_OUTPUT",
    "RUN_FAILED",
    "RUN_FAILED_PREFIX",
    "ScorerRunError",
    "failure_code",
]

# Codes keep the reference system's spelling (including its MASTR_ prefix) for wire compatibility.
MISSING_ID = "MASTR_SCORER_FAILED_TO_CREATE_MISSING_ID"
MISSING_GENERATE_SCORE = "MASTR_SCORER_FAILED_TO_RUN_MISSING_GENERATE_SCORE"
MISSING_MODEL_OR_INSTRUCTIONS = "MASTR_SCORER_FAILED_TO_RUN_MISSING_MODEL_OR_INSTRUCTIONS"
RUN_FAILED = "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED"
RUN_FAILED_PREFIX = "Scorer Run Failed: "
INVALID_SCORER_DEFINITION = "SCOREWATCH_SCORER_INVALID_DEFINITION"
INVALID_STEP_RESULT = "SCOREWATCH_SCORER_INVALID_STEP_RESULT"
INVALID_RUN = "SCOREWATCH_SCORER_INVALID_RUN"
MISSING_OUTPUT = "SCOREWATCH_SCORER_RUN_MISSING_OUTPUT"


class ScorerRunError(ScorewatchError):
    """A step of a scorer run failed.

    `failed_step` and `completed_steps` use Python step names; `result` is the snapshot of what
    the run had produced (None when no step had produced anything). The original error is
    `__cause__`. `to_dict()` never includes `result`, prompts or raw model output.
    """

    def __init__(
        self,
        cause: BaseException,
        *,
        scorer_id: str,
        steps: list[StepName],
        failed_step: StepName,
        completed_steps: list[StepName],
        result: ScorerRunSnapshot | None,
    ) -> None:
        cause_message = getattr(cause, "message", None)
        if not isinstance(cause_message, str):
            cause_message = str(cause) or type(cause).__name__
        super().__init__(
            f"{RUN_FAILED_PREFIX}{cause_message}",
            code=RUN_FAILED,
            details={
                "scorerId": scorer_id,
                "steps": ", ".join(camel_step(s) for s in steps),
                "failedStep": camel_step(failed_step),
                "completedSteps": ", ".join(camel_step(s) for s in completed_steps),
            },
        )
        self.scorer_id = scorer_id
        self.failed_step: StepName = failed_step
        self.completed_steps: list[StepName] = completed_steps
        self.result = result
        self.__cause__ = cause


def failure_code(error: BaseException) -> str | None:
    """The most specific stable code of a failed run: a step failure's cause first (the judge's
    `AUTHENTICATION_FAILED` rather than the wrapper's `RUN_FAILED`), so every surface (stored
    rows, `scorewatch eval`, serve's answers) names the same failure the same way."""
    if isinstance(error, ScorerRunError):
        cause_code = getattr(error.__cause__, "code", None)
        if isinstance(cause_code, str) and cause_code:
            return cause_code
    return error.code if isinstance(error, ScorewatchError) else None
