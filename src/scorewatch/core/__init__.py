"""The scorer core: builder, run pipeline, prompt steps, judge records, errors and the event bus."""

from __future__ import annotations

from .call import AgentCall
from .definition import JudgeConfig, PromptStep
from .errors import ScorerRunError
from .events import (
    OBSERVERS,
    JudgeAttempt,
    JudgeCacheLookup,
    Observer,
    Observers,
    RunListener,
    RunStart,
    StepOutcome,
    observed_by,
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
from .verdict_cache import (
    CachedVerdict,
    MemoryVerdictCache,
    VerdictCache,
    caching_verdicts,
    not_caching_verdicts,
)

__all__ = [
    "OBSERVERS",
    "STEP_ORDER",
    "AgentCall",
    "CachedVerdict",
    "JudgeAttempt",
    "JudgeCacheLookup",
    "JudgeConfig",
    "JudgeErrorSummary",
    "JudgeExecution",
    "JudgeExecutionFailure",
    "JudgeExecutionSuccess",
    "JudgeStepRecord",
    "MemoryVerdictCache",
    "NotScorable",
    "NotScorableInfo",
    "Observer",
    "Observers",
    "PromptStep",
    "RunListener",
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
    "VerdictCache",
    "caching_verdicts",
    "create_scorer",
    "is_not_scorable",
    "not_caching_verdicts",
    "not_scorable",
    "observed_by",
    "offload_function_steps",
    "run_coroutine_sync",
]
