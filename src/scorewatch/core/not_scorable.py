"""`not_scorable()`: a step's way of saying the run has nothing for this scorer to judge.

A step (function or prompt) that returns the marker ends the run early: later steps are skipped,
so no judge call is spent, the result carries no score, and aggregates leave the run out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import SerializationInfo, field_serializer, field_validator

from ..judge.wire import WireModel
from .steps import StepName, camel_step, snake_step

__all__ = ["NotScorable", "NotScorableInfo", "is_not_scorable", "not_scorable"]


@dataclass(frozen=True, slots=True)
class NotScorable:
    """The marker a step returns; build it with `not_scorable(reason)`."""

    reason: str | None = None


def not_scorable(reason: str | None = None) -> NotScorable:
    """Declare that this run has nothing for the scorer to evaluate.

    Return it from any step (typically preprocess). `reason`, when given, is kept on the result.
    """
    if reason is not None and not isinstance(reason, str):
        raise TypeError(f"not_scorable(reason) takes a str or None, got {type(reason).__name__}")
    return NotScorable(reason)


def is_not_scorable(value: Any) -> bool:
    return type(value) is NotScorable


class NotScorableInfo(WireModel):
    """Which step declared the run not scorable, and why (the wire form `{reason, step}`)."""

    step: StepName
    reason: str | None = None

    @field_validator("step", mode="before")
    @classmethod
    def _load_step(cls, value: Any) -> Any:
        return snake_step(value) if isinstance(value, str) else value

    @field_serializer("step")
    def _dump_step(self, step: StepName, info: SerializationInfo) -> str:
        # Step names are camelCase on the reference's wire, as the judge record keys are.
        return camel_step(step) if info.by_alias else step
