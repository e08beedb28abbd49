"""The scorer core: builder, run pipeline, prompt steps, judge records, errors and run hooks."""

from __future__ import annotations

from .definition import JudgeConfig, PromptStep
from .errors import ScorerRunError
from .hooks import (
    JudgeAttempt,
    RunListener,
    RunObserver,
    RunStart,
    StepOutcome,
    add_run_observer,
    remove_run_observer,
)
from .not_scorable import NotScorable, NotScorableInfo, is_not_scorable, not_scorable
from .offload import offload_function_steps
from .records import (
    JudgeErrorSummary,
    JudgeExecution,
    JudgeExecutionFailure,
    JudgeExecutionSuccess,
    JudgeStepRecord,
)
from .result import ScorerRun, ScorerRunResult, ScorerRunSnapshot, StepContext, StepResults
from .scorer import Scorer, create_scorer
from .steps import STEP_ORDER, StepName, StepType
from .sync import run_coroutine_sync

__all__ = [
    "STEP_ORDER",
    "JudgeAttempt",
    "JudgeConfig",
    "JudgeErrorSummary",
    "JudgeExecution",
    "JudgeExecutionFailure",
    "JudgeExecutionSuccess",
    "JudgeStepRecord",
    "NotScorable",
    "NotScorableInfo",
    "PromptStep",
    "RunListener",
    "RunObserver",
    "RunStart",
    "Scorer",
    "ScorerRun",
    "ScorerRunError",
    "ScorerRunResult",
    "ScorerRunSnapshot",
    "StepContext",
    "StepName",
    "StepOutcome",
    "StepResults",
    "StepType",
    "add_run_observer",
    "create_scorer",
    "is_not_scorable",
    "not_scorable",
    "offload_function_steps",
    "remove_run_observer",
    "run_coroutine_sync",
]
