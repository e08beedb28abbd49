"""A stand-in for the judge models of the prompt steps run in a context.

Some callers must see every judge request a scorer would make without sending it to the model:
`scorewatch eval --estimate` counts tokens and prices them, answering each request with a
stand-in reply so the scorer goes on to its next step. Inside `judging_with(stand_in)` a prompt
step calls `stand_in(model, request)` instead of `model.complete(request)`; everything else (the
retries, validation, the judge record, the events) is unchanged. The verdict cache is off there:
a stand-in's answers are not the judge's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..judge.protocol import JudgeModel, JudgeReply, JudgeRequest
from .verdict_cache import not_caching_verdicts

__all__ = ["JudgeStandIn", "current_judge_stand_in", "judging_with"]

JudgeStandIn = Callable[[JudgeModel, JudgeRequest], Awaitable[JudgeReply]]
"""Answers `request` in place of `model`."""

_STAND_IN: ContextVar[JudgeStandIn | None] = ContextVar("scorewatch_judge_stand_in", default=None)


def current_judge_stand_in() -> JudgeStandIn | None:
    return _STAND_IN.get()


@contextmanager
def judging_with(stand_in: JudgeStandIn) -> Iterator[None]:
    """Answer the judge requests of the scorer runs in this context with `stand_in`."""
    token = _STAND_IN.set(stand_in)
    try:
        with not_caching_verdicts():
            yield
    finally:
        _STAND_IN.reset(token)
