"""Batch evaluation: `run_evals` (reference semantics) and `run_experiment` (error isolation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attribute
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
from .noise import ScorerNoise
from .run import (
    EvalResult,
    EvalSummary,
    GateResult,
    ItemComplete,
    ThresholdResult,
    run_evals,
    run_evals_sync,
)

if TYPE_CHECKING:
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
    "ScorerNoise",
    "ScorerResult",
    "Threshold",
    "ThresholdResult",
    "run_evals",
    "run_evals_sync",
    "run_experiment",
    "run_experiment_sync",
]


# The sinks are imported only by whoever stores an experiment, not by every evaluation.
_LAZY: dict[str, tuple[str, str | None]] = {
    "ExperimentSinkWriter": (".store", "ExperimentSinkWriter"),
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(globals(), _LAZY, name)
