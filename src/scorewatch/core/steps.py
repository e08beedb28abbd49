"""Step names and their reference-system (camelCase) spellings."""

from __future__ import annotations

from typing import Literal

__all__ = ["STEP_ORDER", "StepName", "StepType", "camel_step", "snake_step"]

StepName = Literal["preprocess", "analyze", "generate_score", "generate_reason"]
StepType = Literal["function", "prompt"]

STEP_ORDER: tuple[StepName, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")

_CAMEL: dict[str, str] = {
    "preprocess": "preprocess",
    "analyze": "analyze",
    "generate_score": "generateScore",
    "generate_reason": "generateReason",
}
_SNAKE: dict[str, StepName] = {
    "preprocess": "preprocess",
    "analyze": "analyze",
    "generateScore": "generate_score",
    "generateReason": "generate_reason",
    "generate_score": "generate_score",
    "generate_reason": "generate_reason",
}


def camel_step(step: str) -> str:
    return _CAMEL[step]


def snake_step(step: str) -> StepName:
    try:
        return _SNAKE[step]
    except KeyError:
        raise ValueError(
            f"unknown scorer step {step!r}; expected one of {', '.join(STEP_ORDER)}"
        ) from None
