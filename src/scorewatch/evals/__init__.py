"""Batch evaluation: `run_evals` (reference semantics) and `run_experiment` (error isolation)."""

from __future__ import annotations

from .entries import ScorerEntry, Threshold
from .experiment import (
    ExperimentItem,
    ExperimentResult,
    ExperimentSummary,
    RunOutcome,
    ScorerResult,
    run_experiment,
    run_experiment_sync,
)
from .run import (
    EvalResult,
    EvalSummary,
    GateResult,
    ItemComplete,
    ThresholdResult,
    run_evals,
    run_evals_sync,
)
from .store import ExperimentSinkWriter

__all__ = [
    "EvalResult",
    "EvalSummary",
    "ExperimentItem",
    "ExperimentResult",
    "ExperimentSinkWriter",
    "ExperimentSummary",
    "GateResult",
    "ItemComplete",
    "RunOutcome",
    "ScorerEntry",
    "ScorerResult",
    "Threshold",
    "ThresholdResult",
    "run_evals",
    "run_evals_sync",
    "run_experiment",
    "run_experiment_sync",
]
